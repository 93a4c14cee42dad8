#include "autodiff/nn/module.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>

#include "tensor/core/error.h"

namespace ruccl::nn {

namespace {
std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

void check_name(const std::string& name, const char* op) {
  RUCCL_CHECK(!name.empty() && name.find('.') == std::string::npos, ValueError, "Module::", op,
              ": expected a non-empty name without dots, got '", name, "'");
}

/// The handles copied during the clone() running on this thread (null when none runs): each
/// copy of a handle made while the tree is copied enlists itself here, to be re-seated on the
/// copy's sub-modules. Thread-local, so clones on different threads do not see each other's.
thread_local std::vector<detail::HandleBase*>* clone_handles = nullptr;
}  // namespace

namespace detail {

void HandleBase::enlist() {
  if (clone_handles != nullptr && module_ != nullptr) clone_handles->push_back(this);
}

void HandleBase::delist() {
  if (clone_handles == nullptr) return;
  // A handle copied and destroyed within the clone (a temporary in a user's copy constructor).
  auto& handles = *clone_handles;
  handles.erase(std::remove(handles.begin(), handles.end(), this), handles.end());
}

void HandleBase::throw_empty(const std::type_info& type) {
  throw ValueError(str("ModuleHandle<", type_name(type),
                       ">: expected a handle to a module, got an empty one (default-constructed: "
                       "assign it the result of register_module)"));
}

std::string type_name(const std::type_info& type) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string name = status == 0 && demangled != nullptr ? demangled : type.name();
  std::free(demangled);  // NOLINT: __cxa_demangle allocates with malloc
  // Drop the namespaces (and "(anonymous namespace)::") outside template arguments.
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (depth == 0 && c == ':' && i + 1 < name.size() && name[i + 1] == ':') start = i + 2;
  }
  return name.substr(start);
}

}  // namespace detail

Var Module::forward(const Var&) {
  throw NotImplementedError(
      str(describe(),
          ": forward(const Var&) is not implemented; a module whose forward takes other "
          "arguments is called through its handle (block->forward(x, mask)), not by Sequential"));
}

void Module::throw_not_a() {
  throw ValueError("Module::clone_as: the module is not of the requested type");
}

std::size_t Module::register_parameter(std::string name, Param param) {
  check_name(name, "register_parameter");
  RUCCL_CHECK(param.defined(), ValueError, "Module::register_parameter: expected a defined Param '",
              name, "', got an undefined one");
  for (const auto& [n, p] : params_) {
    RUCCL_CHECK(n != name, ValueError, "Module::register_parameter: '", name,
                "' is already registered");
  }
  params_.emplace_back(std::move(name), std::move(param));
  return params_.size() - 1;
}

void Module::add_child(std::string name, std::shared_ptr<Module> module) {
  check_name(name, "register_module");
  RUCCL_CHECK(module != nullptr, ValueError, "Module::register_module: expected a module for '",
              name, "', got null");
  for (const auto& [n, m] : children_) {
    RUCCL_CHECK(n != name, ValueError, "Module::register_module: '", name,
                "' is already registered");
  }
  // A module takes the path of its first registration (as a tied parameter its first path's).
  if (module->path_.empty() && module.get() != this) module->set_path(join(path_, name));
  children_.emplace_back(std::move(name), std::move(module));
}

void Module::set_path(const std::string& path) {
  const std::string old = path_;
  path_ = path;
  for (auto& [name, child] : children_) {
    if (child->path_ == join(old, name)) child->set_path(join(path_, name));
  }
}

std::string Module::type_name() const { return detail::type_name(typeid(*this)); }

std::string Module::describe() const {
  return path_.empty() ? type_name() : str(path_, " (", type_name(), ")");
}

Module& Module::child_at(std::size_t index) const {
  RUCCL_CHECK(index < children_.size(), ValueError, "Module::child_at: expected an index below ",
              children_.size(), ", got ", index);
  return *children_[index].second;
}

void Module::throw_child_type(std::size_t index, const std::type_info& wanted) const {
  const auto& [name, child] = children_[index];
  throw ValueError(str("Module::child_at: sub-module '", join(path_, name), "' is a ",
                       detail::type_name(typeid(*child)), ", not the requested ",
                       detail::type_name(wanted)));
}

std::size_t Module::register_buffer(std::string name, Tensor tensor) {
  check_name(name, "register_buffer");
  RUCCL_CHECK(tensor.defined(), ValueError, "Module::register_buffer: expected a defined tensor '",
              name, "', got an undefined one");
  for (const auto& [n, b] : buffers_) {
    RUCCL_CHECK(n != name, ValueError, "Module::register_buffer: '", name,
                "' is already registered");
  }
  for (const auto& [n, p] : params_) {
    RUCCL_CHECK(n != name, ValueError, "Module::register_buffer: '", name,
                "' is already a parameter's name");
  }
  buffers_.emplace_back(std::move(name), std::move(tensor));
  return buffers_.size() - 1;
}

std::vector<std::pair<std::string, Module*>> Module::distinct_modules() {
  std::vector<std::pair<std::string, Module*>> out{{"", this}};
  std::unordered_set<const Module*> seen{this};
  for (std::size_t i = 0; i < out.size(); ++i) {  // out grows: each module's children after it
    const auto [prefix, module] = out[i];
    std::vector<std::pair<std::string, Module*>> children;
    for (auto& [name, m] : module->children_) {
      if (seen.insert(m.get()).second) children.emplace_back(prefix + name + ".", m.get());
    }
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(i) + 1, children.begin(), children.end());
  }
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [prefix, m] : const_cast<Module*>(this)->distinct_modules()) {
    for (const auto& [name, b] : m->buffers_) out.emplace_back(prefix + name, b);
  }
  return out;
}

std::vector<Tensor> Module::buffers() const {
  std::vector<Tensor> out;
  for (auto& [path, b] : named_buffers()) out.push_back(std::move(b));
  return out;
}

template <typename T>
T* Module::find_entry(std::vector<std::pair<std::string, T>> Module::*entries,
                      std::string_view path) {
  const std::size_t dot = path.find('.');
  if (dot == std::string_view::npos) {
    for (auto& [name, entry] : this->*entries) {
      if (name == path) return &entry;
    }
    return nullptr;
  }
  const std::string_view head = path.substr(0, dot);
  for (auto& [name, m] : children_) {
    if (name == head) return m->find_entry(entries, path.substr(dot + 1));
  }
  return nullptr;
}

Tensor* Module::find_buffer(std::string_view path) { return find_entry(&Module::buffers_, path); }

Tensor Module::buffer(std::string_view path) const {
  Tensor* b = const_cast<Module*>(this)->find_buffer(path);
  RUCCL_CHECK(b != nullptr, ValueError, "Module::buffer: no buffer at path '", path, "'");
  return *b;
}

void Module::set_buffer(std::string_view path, const Tensor& value) {
  Tensor* b = find_buffer(path);
  RUCCL_CHECK(b != nullptr, ValueError, "Module::set_buffer: no buffer at path '", path, "'");
  RUCCL_CHECK(value.defined(), ValueError, "Module::set_buffer: expected a defined tensor for '",
              path, "', got an undefined one");
  RUCCL_CHECK(value.shape() == b->shape(), ShapeError, "Module::set_buffer: expected shape ",
              b->shape(), " at '", path, "', got ", value.shape());
  RUCCL_CHECK(value.dtype() == b->dtype(), DTypeError, "Module::set_buffer: expected dtype ",
              b->dtype(), " at '", path, "', got ", value.dtype());
  RUCCL_CHECK(value.device() == b->device(), DeviceError, "Module::set_buffer: expected device ",
              b->device(), " at '", path, "', got ", value.device());
  *b = value;
}

std::size_t Module::register_generator(std::string name, Generator generator) {
  check_name(name, "register_generator");
  for (const auto& [n, g] : generators_) {
    RUCCL_CHECK(n != name, ValueError, "Module::register_generator: '", name,
                "' is already registered");
  }
  generators_.emplace_back(std::move(name), generator);
  return generators_.size() - 1;
}

std::vector<std::pair<std::string, Generator*>> Module::named_generators() {
  std::vector<std::pair<std::string, Generator*>> out;
  for (auto& [name, g] : generators_) out.emplace_back(name, &g);
  for (auto& [name, m] : children_) {
    for (auto& [path, g] : m->named_generators()) out.emplace_back(name + "." + path, g);
  }
  return out;
}

std::vector<std::pair<std::string, const Generator*>> Module::named_generators() const {
  std::vector<std::pair<std::string, const Generator*>> out;
  for (auto& [path, g] : const_cast<Module*>(this)->named_generators()) out.emplace_back(path, g);
  return out;
}

void Module::visit(const std::string& prefix,
                   std::vector<std::pair<std::string, Param>>& out) const {
  for (const auto& [name, p] : params_) out.emplace_back(prefix + name, p);
  for (const auto& [name, m] : children_) m->visit(prefix + name + ".", out);
}

std::vector<std::pair<std::string, Param>> Module::named_parameters(bool include_aliases) const {
  std::vector<std::pair<std::string, Param>> all;
  visit("", all);
  // Each distinct parameter without an id takes its first path's (see ParamId in param.h); two
  // distinct parameters holding one path-derived id are a collision. Duplicate explicit ids are
  // left to DataParallel, which reports them on every rank together.
  std::vector<bool> first(all.size(), false);
  std::unordered_set<const void*> seen;
  std::unordered_map<ParamId, std::size_t> path_id_owner;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& [path, p] = all[i];
    if (!seen.insert(p.key()).second) continue;
    first[i] = true;
    ParamId id = p.id_or_none();
    if (id == kNoParamId) id = p.adopt_id(param_id_for_path(path));
    if (!is_path_param_id(id)) continue;
    const auto [owner, fresh] = path_id_owner.emplace(id, i);
    RUCCL_CHECK(fresh, ValueError, "Module::named_parameters: parameters '",
                all[owner->second].first, "' and '", path, "' are distinct but both have ParamId ",
                id,
                ", derived from a path. A parameter takes the id of its path in the first module "
                "that lists it, so sub-modules listed on their own before they were put together "
                "(each at 'weight', say) collide: list parameters only once the model is built, or "
                "give explicit ids with model.assign_param_ids(1)");
  }
  if (include_aliases) return all;
  std::vector<std::pair<std::string, Param>> out;
  out.reserve(seen.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (first[i]) out.push_back(std::move(all[i]));
  }
  return out;
}

std::vector<Param> Module::parameters() const {
  std::vector<Param> out;
  for (auto& [name, p] : named_parameters()) out.push_back(std::move(p));
  return out;
}

std::vector<Param> Module::distinct_parameters() const {
  std::vector<std::pair<std::string, Param>> all;
  visit("", all);
  std::vector<Param> out;
  std::unordered_set<const void*> seen;
  for (auto& entry : all) {
    if (seen.insert(entry.second.key()).second) out.push_back(std::move(entry.second));
  }
  return out;
}

std::vector<std::pair<ParamId, std::vector<std::string>>> Module::aliases() const {
  const std::vector<std::pair<std::string, Param>> all = named_parameters(/*include_aliases=*/true);
  std::vector<std::pair<const void*, std::pair<ParamId, std::vector<std::string>>>> groups;
  for (const auto& [path, p] : all) {
    bool found = false;
    for (auto& g : groups) {
      if (g.first == p.key()) {
        g.second.second.push_back(path);
        found = true;
        break;
      }
    }
    if (!found) groups.push_back({p.key(), {p.id(), {path}}});
  }
  std::vector<std::pair<ParamId, std::vector<std::string>>> out;
  for (auto& g : groups) {
    if (g.second.second.size() > 1) out.push_back(std::move(g.second));
  }
  return out;
}

Param* Module::find_param(std::string_view path) { return find_entry(&Module::params_, path); }

Param Module::param(std::string_view path) const {
  Param* p = const_cast<Module*>(this)->find_param(path);
  RUCCL_CHECK(p != nullptr, ValueError, "Module::param: no parameter at path '", path, "'");
  if (!p->has_id()) (void)named_parameters();  // ids from this module's paths (see ParamId)
  return *p;
}

void Module::set_param(std::string_view path, const Param& param) {
  Param* p = find_param(path);
  RUCCL_CHECK(p != nullptr, ValueError, "Module::set_param: no parameter at path '", path, "'");
  RUCCL_CHECK(param.defined(), ValueError, "Module::set_param: expected a defined Param for '",
              path, "', got an undefined one");
  RUCCL_CHECK(param.shape() == p->shape(), ShapeError, "Module::set_param: expected shape ",
              p->shape(), " at '", path, "', got ", param.shape());
  RUCCL_CHECK(param.dtype() == p->dtype(), DTypeError, "Module::set_param: expected dtype ",
              p->dtype(), " at '", path, "', got ", param.dtype());
  *p = param;
}

void Module::assign_param_ids(ParamId first) {
  std::vector<Param> params = distinct_parameters();  // no derived ids, no collision check
  RUCCL_CHECK(params.empty() || first <= kNoParamId - params.size(), ValueError,
              "Module::assign_param_ids: expected ", params.size(),
              " ids from the first one that stay below 2^64 - 1, got first = ", first);
  for (Param& p : params) p.set_id(first++);
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  return children_;
}

std::shared_ptr<Module> Module::child(std::string_view name) const {
  for (const auto& [n, m] : children_) {
    if (n == name) return m;
  }
  throw ValueError(str("Module::child: no sub-module named '", name, "'"));
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, m] : children_) m->train(on);
}

void Module::set_trainable(bool trainable) {
  for (Param& p : distinct_parameters()) p.set_trainable(trainable);
}

void Module::zero_grad() {
  for (Param& p : distinct_parameters()) p.zero_grad();
}

void Module::to(DType dtype) {
  RUCCL_CHECK(is_floating(dtype), DTypeError,
              "Module::to: expected a floating dtype (F16, BF16, F32, F64), got ", dtype);
  for (Param& p : distinct_parameters()) {
    if (!is_floating(p.dtype()) || p.dtype() == dtype) continue;
    const Tensor& grad = p.grad();
    p.convert(p.value().to(dtype), grad.defined() ? grad.to(dtype) : Tensor());
  }
  for (const auto& [prefix, m] : distinct_modules()) {
    for (auto& [name, b] : m->buffers_) {
      if (is_floating(b.dtype())) b = b.to(dtype);
    }
  }
}

void Module::to(Device device) {
  for (Param& p : distinct_parameters()) {
    if (p.value().device() == device) continue;
    const Tensor& grad = p.grad();
    p.convert(p.value().to(device), grad.defined() ? grad.to(device) : Tensor());
  }
  for (const auto& [prefix, m] : distinct_modules()) {
    for (auto& [name, b] : m->buffers_) b = b.to(device);
  }
}

void Module::deep_copy_into(ParamMap& params, ModuleMap& modules,
                            detail::ParamReseatScope& reseat) {
  // The shallow copy already took the copies of the parameters (Param's copy constructor, under
  // `reseat`); an original left here would be a bug.
  for (auto& [name, p] : params_) {
    const auto it = params.find(p.key());
    if (it != params.end()) p = it->second;
  }
  for (auto& [name, b] : buffers_) b = b.clone();
  for (auto& [name, m] : children_) {
    // A sub-module registered at several places stays one module in the copy.
    auto it = modules.find(m.get());
    if (it == modules.end()) {
      reseat.set_module(m->describe());
      std::shared_ptr<Module> copy = m->shallow_copy();
      it = modules.emplace(m.get(), copy).first;
      copy->deep_copy_into(params, modules, reseat);
    }
    m = it->second;
  }
}

std::shared_ptr<Module> Module::clone() const {
  // Every handle copied from here on (the members of each module's shallow copy) enlists in
  // `handles`; once the whole tree is copied, each one pointing into the original tree is
  // re-seated on its copy (see ModuleHandle).
  std::vector<detail::HandleBase*> handles;
  std::vector<detail::HandleBase*>* const outer = clone_handles;
  clone_handles = &handles;
  struct Restore {
    std::vector<detail::HandleBase*>* outer;
    ~Restore() { clone_handles = outer; }
  } restore{outer};
  // Every parameter's copy first, so that copying a module's class re-seats its Param members
  // (registered ones) on the copies (see Param's copy constructor).
  ParamMap params;
  for (const Param& p : distinct_parameters()) params.emplace(p.key(), p.deep_copy());
  detail::ParamReseatScope reseat(params);
  reseat.set_module(describe());
  std::shared_ptr<Module> copy = shallow_copy();
  ModuleMap modules;
  copy->deep_copy_into(params, modules, reseat);
  copy->set_path("");  // a replica is a model of its own
  for (detail::HandleBase* handle : handles) {
    auto it = modules.find(handle->module_.get());
    if (it != modules.end()) handle->module_ = it->second;
  }
  return copy;
}

}  // namespace ruccl::nn
