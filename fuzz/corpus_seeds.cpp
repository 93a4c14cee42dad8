// Writes the seed inputs of the fuzzers: a valid input of every kind each target decodes, from
// which libFuzzer mutates. The committed corpora (fuzz/corpus/<target>/) started from these,
// plus what a 60 s run found worth keeping, minimised with -merge=1.
//
//   fuzz_corpus_seeds fuzz/corpus      (writes corpus/frame_header/seed-*,
//   corpus/call_record/seed-*, corpus/p2p_header/seed-*, corpus/peer_auth/seed-*)
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "collective/common/collective_error.h"
#include "collective/common/crc32c.h"
#include "collective/net/peer_auth_codec.h"
#include "collective/protocol/call_record_codec.h"
#include "collective/protocol/p2p_header.h"
#include "collective/transport/tcp/tcp_frame.h"
#include "collective/transport/tcp/tcp_frame_payloads.h"

using namespace ruccl;

namespace {

namespace fs = std::filesystem;

void write(const fs::path& file, const std::vector<std::uint8_t>& bytes) {
  fs::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + file.string());
  std::printf("%s (%zu bytes)\n", file.c_str(), bytes.size());
}

// An input of frame_header_fuzzer: mode 3 (expect the header's own session and seq), the header,
// the payload.
std::vector<std::uint8_t> frame(FrameType type, std::uint64_t seq, std::uint64_t tag,
                                std::uint64_t message_bytes,
                                const std::vector<std::uint8_t>& payload) {
  FrameHeader h;
  h.type = type;
  h.payload_bytes = static_cast<std::uint32_t>(payload.size());
  for (std::size_t i = 0; i < h.session.size(); ++i)
    h.session[i] = static_cast<std::uint8_t>(0xC0 + i);
  h.seq = seq;
  h.tag = tag;
  h.message_bytes = message_bytes;
  h.payload_crc = crc32c(payload.data(), payload.size());
  std::vector<std::uint8_t> out(1 + kFrameHeaderBytes);
  out[0] = 3;
  encode_frame_header(
      h, std::span<std::uint8_t, kFrameHeaderBytes>(out.data() + 1, kFrameHeaderBytes));
  out.insert(out.end(), payload.begin(), payload.end());
  FrameHeader back;  // a seed the fuzzer's header check accepts, or it seeds nothing
  const std::string error = decode_frame_header(
      std::span<const std::uint8_t, kFrameHeaderBytes>(out.data() + 1, kFrameHeaderBytes),
      h.session, seq, back);
  if (!error.empty()) throw std::runtime_error("seed frame refused: " + error);
  return out;
}

CallRecord all_reduce_record() {
  CallRecord r;
  r.seq = 42;
  r.kind = OpKind::AllReduce;
  r.dtype = 0;
  r.reduce_op = 0;
  r.has_tensor = 1;
  r.set_shape(Shape{128, 3});
  CallRecord::set_text(r.label, "grads");
  return r;
}

CallRecord full_record() {
  CallRecord r = all_reduce_record();
  r.kind = OpKind::AllToAllV;
  r.set_shape(Shape{3, 0, 7, 1, 2, 9, 4, 5});
  r.num_words = CallRecord::kMaxWords;
  for (int w = 0; w < r.num_words; ++w) {
    r.words[w] = -1000 * (w + 1);
    CallRecord::set_text(r.word_names[w], ("axis" + std::to_string(w)).c_str());
  }
  r.error_kind = static_cast<std::uint8_t>(CollectiveErrorKind::Timeout);
  CallRecord::set_text(r.error_message, "rank 2 never arrived");
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_ROOT (e.g. fuzz/corpus)\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  std::vector<std::uint8_t> record, full;
  encode_call_record(all_reduce_record(), record);
  encode_call_record(full_record(), full);
  write(root / "call_record" / "seed-empty-record", [] {
    std::vector<std::uint8_t> out;
    encode_call_record(CallRecord{}, out);
    return out;
  }());
  write(root / "call_record" / "seed-all-reduce", record);
  write(root / "call_record" / "seed-full", full);

  HelloPayload hello;
  hello.rank = 1;
  hello.world_size = 4;
  hello.channel = TcpChannel::Data;
  std::vector<std::uint8_t> hello_bytes, abort_bytes;
  encode_hello_payload(hello, hello_bytes);
  encode_abort_payload(
      CollectiveError(CollectiveErrorKind::PeerLost, "rank 3 lost: connection reset", {3}),
      abort_bytes);
  std::vector<std::uint8_t> data(64);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 37);
  const fs::path frames = root / "frame_header";
  write(frames / "seed-hello", frame(FrameType::Hello, 1, 0, 0, hello_bytes));
  write(frames / "seed-record", frame(FrameType::Record, 2, 42, 0, record));
  write(frames / "seed-data", frame(FrameType::Data, 3, 7, 1000, data));
  write(frames / "seed-abort", frame(FrameType::Abort, 4, 0, 0, abort_bytes));
  write(frames / "seed-heartbeat", frame(FrameType::Heartbeat, 5, 0, 0, {}));
  write(frames / "seed-goodbye", frame(FrameType::Goodbye, 6, 0, 0, {}));

  auto header = [](DType dtype, const Shape& shape) {
    const P2PHeaderBytes h = encode_p2p_header(dtype, shape);
    return std::vector<std::uint8_t>(h.begin(), h.end());
  };
  const fs::path p2p = root / "p2p_header";
  write(p2p / "seed-scalar", header(DType::F64, Shape{}));
  write(p2p / "seed-matrix", header(DType::F32, Shape{3, 4}));
  write(p2p / "seed-eight-dims", header(DType::Bool, Shape{1, 2, 3, 4, 5, 6, 7, 8}));
  write(p2p / "seed-empty", header(DType::I64, Shape{0, 5}));

  const fs::path auth = root / "peer_auth";
  net::AuthMessage challenge;
  challenge.type = net::AuthMessageType::Challenge;
  challenge.purpose = net::AuthPurpose::MeshData;
  challenge.from_rank = 3;
  challenge.to_rank = 1;
  for (std::size_t i = 0; i < challenge.nonce.size(); ++i) {
    challenge.nonce[i] = static_cast<std::uint8_t>(i * 11 + 5);
  }
  net::AuthMessage response = challenge;
  response.type = net::AuthMessageType::Response;
  for (std::size_t i = 0; i < response.mac.size(); ++i) {
    response.mac[i] = static_cast<std::uint8_t>(255 - i * 7);
  }
  net::AuthMessage store = challenge;
  store.purpose = net::AuthPurpose::Store;
  store.to_rank = -1;
  for (const auto& [name, m] :
       {std::pair{"seed-challenge", challenge}, std::pair{"seed-response", response},
        std::pair{"seed-store", store}}) {
    const auto bytes = net::encode_auth_message(m);
    write(auth / name, std::vector<std::uint8_t>(bytes.begin(), bytes.end()));
  }
  return 0;
}
