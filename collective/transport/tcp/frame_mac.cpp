#include "collective/transport/tcp/frame_mac.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <climits>

#include "tensor/core/error.h"

namespace ruccl {

namespace {

EVP_CIPHER_CTX* context(void* ctx) { return static_cast<EVP_CIPHER_CTX*>(ctx); }

void check(int ok, const char* what) {
  RUCCL_ASSERT(ok == 1, "FrameMac: OpenSSL ", what, " failed");
}

}  // namespace

FrameMac::FrameMac(const FrameKey& key) : ctx_(EVP_CIPHER_CTX_new()) {
  RUCCL_ASSERT(ctx_ != nullptr, "FrameMac: EVP_CIPHER_CTX_new failed (out of memory)");
  // The key schedule once; begin() only sets the nonce.
  check(EVP_EncryptInit_ex(context(ctx_), EVP_aes_128_gcm(), nullptr, key.data(), nullptr),
        "EVP_EncryptInit_ex (key)");
}

FrameMac::~FrameMac() { EVP_CIPHER_CTX_free(context(ctx_)); }

void FrameMac::begin(std::uint64_t seq) {
  std::uint8_t iv[12] = {};  // GCM's default 96-bit nonce: 4 zero bytes, then seq little-endian
  for (int i = 0; i < 8; ++i) iv[4 + i] = static_cast<std::uint8_t>(seq >> (8 * i));
  check(EVP_EncryptInit_ex(context(ctx_), nullptr, nullptr, nullptr, iv),
        "EVP_EncryptInit_ex (nonce)");
}

void FrameMac::update(const std::uint8_t* data, std::size_t n) {
  while (n > 0) {
    const int k = static_cast<int>(std::min<std::size_t>(n, INT_MAX / 2));
    int out = 0;  // additional authenticated data: no output
    check(EVP_EncryptUpdate(context(ctx_), nullptr, &out, data, k), "EVP_EncryptUpdate (AAD)");
    data += k;
    n -= static_cast<std::size_t>(k);
  }
}

FrameTag FrameMac::finish() {
  FrameTag tag{};
  std::uint8_t none[16];  // GCM's final writes nothing (no plaintext was given)
  int out = 0;
  check(EVP_EncryptFinal_ex(context(ctx_), none, &out), "EVP_EncryptFinal_ex");
  check(EVP_CIPHER_CTX_ctrl(context(ctx_), EVP_CTRL_GCM_GET_TAG, static_cast<int>(tag.size()),
                            tag.data()),
        "EVP_CTRL_GCM_GET_TAG");
  return tag;
}

bool frame_tags_equal(const FrameTag& a, const FrameTag& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace ruccl
