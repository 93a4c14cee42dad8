// What a TcpStoreServer does with each request (the store's operations, write-once keys) and with
// each message of a connection's authentication. The poll loop is in tcp_store_server.cpp.
#include <algorithm>

#include "collective/common/collective_error.h"
#include "collective/store/tcp_store_server_state.h"

namespace ruccl {

void TcpStoreServer::State::reply(std::uint64_t client, std::uint64_t request_id,
                                  StoreStatus status, StoreValue value) {
  auto it = clients.find(client);
  if (it == clients.end() || it->second.dead) return;
  StoreReply r;
  r.header.status = status;
  r.header.request_id = request_id;
  r.value = std::move(value);
  encode_store_reply(r, it->second.out);
  flush(it->second);
}

void TcpStoreServer::State::reply_error(std::uint64_t client, std::uint64_t request_id,
                                        const std::string& what) {
  reply(client, request_id, StoreStatus::InvalidArgument, StoreValue(what.begin(), what.end()));
}

void TcpStoreServer::State::handle(std::uint64_t client, StoreRequest& r) {
  const std::uint64_t rid = r.header.request_id;
  const auto bool_value = [](bool b) { return StoreValue{static_cast<std::uint8_t>(b ? 1 : 0)}; };
  switch (r.header.op) {
    case StoreOp::Hello:
      reply(client, rid, StoreStatus::Ok,
            StoreValue{static_cast<std::uint8_t>(kStoreProtocolVersion & 0xFF),
                       static_cast<std::uint8_t>(kStoreProtocolVersion >> 8)});
      return;
    case StoreOp::Set:
      if (std::string refused = put(client, std::move(r.key), std::move(r.value));
          !refused.empty()) {
        reply_error(client, rid, refused);
        return;
      }
      reply(client, rid, StoreStatus::Ok, {});
      return;
    case StoreOp::Get:
    case StoreOp::Wait: {
      Parked p{client,
               rid,
               r.header.op,
               {},
               Clock::now() + std::chrono::milliseconds(r.header.timeout_ms)};
      if (r.header.op == StoreOp::Get)
        p.keys.push_back(std::move(r.key));
      else
        p.keys = std::move(r.keys);
      parked.push_back(std::move(p));
      return;  // answered by answer_parked, now if the keys are here
    }
    case StoreOp::Add: {
      auto it = values.find(r.key);
      try {
        const std::int64_t sum = store_detail::add_to_text(
            "TcpStoreServer", r.key,
            it == values.end() ? std::span<const std::uint8_t>() : std::span(it->second), r.delta);
        const std::string text = std::to_string(sum);
        if (std::string refused = put(client, r.key, StoreValue(text.begin(), text.end()));
            !refused.empty()) {
          reply_error(client, rid, refused);
          return;
        }
        StoreValue v(8);
        for (int i = 0; i < 8; ++i)
          v[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(sum) >> (8 * i));
        reply(client, rid, StoreStatus::Ok, std::move(v));
      } catch (const CollectiveError& e) {
        const std::string what = e.what();
        reply_error(client, rid, what);
      }
      return;
    }
    case StoreOp::CompareSet: {
      auto it = values.find(r.key);
      if (it == values.end() && !r.expected.empty()) {
        reply(client, rid, StoreStatus::Ok, std::move(r.expected));
        return;
      }
      if (it == values.end() || it->second == r.expected) {
        if (std::string refused = put(client, r.key, std::move(r.value)); !refused.empty()) {
          reply_error(client, rid, refused);
          return;
        }
        it = values.find(r.key);
      }
      reply(client, rid, StoreStatus::Ok, it->second);
      return;
    }
    case StoreOp::Remove:
      if (store_key_is_write_once(r.key) && values.find(r.key) != values.end()) {
        const std::string what =
            str("store key \"", r.key,
                "\" is written once per attempt: it cannot be removed (from ", writer(client), ")");
        reply_error(client, rid, what);
        return;
      }
      reply(client, rid, StoreStatus::Ok, bool_value(erase(r.key)));
      return;
    case StoreOp::Check:
      reply(client, rid, StoreStatus::Ok, bool_value(has_all(r.keys)));
      return;
  }
}

void TcpStoreServer::State::authenticate(Client& c) {
  net::AuthMessage m;
  std::string why = net::decode_auth_message(std::span(c.in.data(), net::kAuthMessageBytes), m);
  if (why.empty() && c.stage == AuthStage::Challenge) {
    if (m.type != net::AuthMessageType::Challenge || m.purpose != net::AuthPurpose::Store) {
      why = "not a store challenge";
    } else {
      c.binding = net::AuthBinding{m.purpose, m.from_rank, m.to_rank, session};
      c.dialer_nonce = m.nonce;
      c.acceptor_nonce = net::auth_nonce();
      net::AuthMessage response = m;
      response.type = net::AuthMessageType::Response;
      response.nonce = c.acceptor_nonce;
      response.mac = net::auth_mac(*secret, true, c.binding, c.dialer_nonce, c.acceptor_nonce);
      const auto bytes = net::encode_auth_message(response);
      c.out.insert(c.out.end(), bytes.begin(), bytes.end());
      flush(c);
      c.stage = AuthStage::Proof;
      return;
    }
  } else if (why.empty()) {
    const Mac expected = net::auth_mac(*secret, false, c.binding, c.dialer_nonce, c.acceptor_nonce);
    if (m.type != net::AuthMessageType::Proof || !job_secrets_equal(expected, m.mac)) {
      why = "wrong MAC (it does not hold the secret)";
    } else {
      c.stage = AuthStage::Done;
      c.greeted = true;
      return;
    }
  }
  net::count_auth_refusal(
      str("store client ", c.peer, " claiming rank ", c.binding.from_rank, ": ", why));
  refuse(c);
}

std::string TcpStoreServer::State::put(std::uint64_t client, std::string key, StoreValue value) {
  const auto it = values.find(key);
  const bool once = store_key_is_write_once(key);
  if (once && it != values.end()) {
    if (it->second == value) return "";  // the same again: harmless
    return str("store key \"", key,
               "\" is written once per attempt (it carries an address or identity): first set by ",
               writers[key], ", a second write refused from ", writer(client));
  }
  const std::size_t old_bytes = it == values.end() ? 0 : key.size() + it->second.size();
  const std::size_t after = stored_bytes - old_bytes + key.size() + value.size();
  if (after > limits.total_bytes && after > stored_bytes) {
    return str("TcpStoreServer: storing ", value.size(), " bytes under \"", key,
               "\" refused: the store would hold ", after, " bytes, over its cap of ",
               limits.total_bytes, " (TcpStoreLimits::total_bytes)");
  }
  if (once) writers[key] = writer(client);
  stored_bytes = after;
  values.insert_or_assign(std::move(key), std::move(value));
  return "";
}

bool TcpStoreServer::State::erase(const std::string& key) {
  const auto it = values.find(key);
  if (it == values.end()) return false;
  stored_bytes -= key.size() + it->second.size();
  values.erase(it);
  return true;
}

std::string TcpStoreServer::State::writer(std::uint64_t client) const {
  const auto it = clients.find(client);
  if (it == clients.end()) return "a client now gone";
  const Client& c = it->second;
  if (secret && c.binding.from_rank >= 0) return str(c.peer, " (rank ", c.binding.from_rank, ")");
  return c.peer;
}

void TcpStoreServer::State::answer_parked(Clock::time_point now) {
  for (auto it = parked.begin(); it != parked.end();) {
    const Parked& p = *it;
    if (has_all(p.keys)) {
      StoreValue v;
      if (p.op == StoreOp::Get) v = values.find(p.keys.front())->second;
      reply(p.client, p.request_id, StoreStatus::Ok, std::move(v));
    } else if (p.deadline <= now) {
      std::vector<std::string> missing;
      for (const std::string& k : p.keys)
        if (values.find(k) == values.end()) missing.push_back(k);
      StoreValue list;
      encode_store_key_list(missing, list);
      reply(p.client, p.request_id, StoreStatus::Timeout, std::move(list));
    } else {
      ++it;
      continue;
    }
    it = parked.erase(it);
  }
}

}  // namespace ruccl
