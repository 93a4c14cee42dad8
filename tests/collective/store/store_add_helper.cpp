// The store tests' second process: `ruccl_store_add_helper file DIR SESSION KEY COUNT` or
// `ruccl_store_add_helper tcp HOST:PORT SESSION KEY COUNT` adds 1 to KEY COUNT times through a
// FileStore or TcpStore client of its own. Exit status 0 on success, 1 (with the error on stderr)
// otherwise.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

#include "collective/store/file_store.h"
#include "collective/store/tcp_store.h"

int main(int argc, char** argv) {
  using namespace ruccl;
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s file|tcp DIR|HOST:PORT SESSION KEY COUNT\n", argv[0]);
    return 1;
  }
  try {
    const std::string kind = argv[1];
    const SessionId session = parse_session_id(argv[3]);
    std::unique_ptr<Store> store;
    if (kind == "file")
      store = std::make_unique<FileStore>(argv[2], session);
    else
      store = std::make_unique<TcpStore>(net::parse_endpoint(argv[2]), session,
                                         Deadline::after(std::chrono::seconds(30)));
    const long count = std::strtol(argv[5], nullptr, 10);
    for (long i = 0; i < count; ++i) store->add(argv[4], 1);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ruccl_store_add_helper: %s\n", e.what());
    return 1;
  }
}
