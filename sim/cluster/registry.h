// Registry: policies registered by name with a one-line description, so a
// scenario names them and `fleetsim list` prints them. Filled by explicit
// RegisterBuiltins() calls (sim/cluster/builtins.h), never by static
// initialisers, which a static library may drop.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fleetsim {

template <typename Factory>
class Registry {
 public:
  struct Entry {
    std::string name;
    std::string description;  // one line
    Factory factory;
    // Schedulers: the engine profile (model/engines) whose overheads come
    // with this scheduler when a pool names none. Empty for other policies.
    std::string engine;
  };

  void Add(std::string name, std::string description, Factory factory, std::string engine = "") {
    entries_.push_back(Entry{std::move(name), std::move(description), std::move(factory), std::move(engine)});
  }
  const Entry* Find(std::string_view name) const {
    for (const Entry& e : entries_)
      if (e.name == name) return &e;
    return nullptr;
  }
  // In registration order.
  std::vector<std::string> Names() const {
    std::vector<std::string> out;
    for (const Entry& e : entries_) out.push_back(e.name);
    return out;
  }
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
};

}  // namespace fleetsim
