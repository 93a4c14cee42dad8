#include "collective/call_options.h"

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

}  // namespace ruccl
