#include "collective/call_options.h"

#include <string>

namespace ruccl {

const char* algorithm_name(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::Auto:
      return "auto";
    case Algorithm::Direct:
      return "direct";
    case Algorithm::Ring:
      return "ring";
    case Algorithm::Tree:
      return "tree";
    case Algorithm::Centralized:
      return "centralized";
  }
  return nullptr;
}

std::string invalid_algorithm_message(Algorithm algorithm) {
  return "expected an Algorithm (Auto, Direct, Ring, Tree, Centralized), got Algorithm(" +
         std::to_string(static_cast<int>(algorithm)) + ")";
}

}  // namespace ruccl
