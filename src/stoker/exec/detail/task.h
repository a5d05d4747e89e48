// Task: a move-only `void(std::stop_token)` callable, the unit of work a ThreadPool runs.
// std::function needs copyable targets, and pool tasks routinely own move-only things (a Promise,
// a buffer), so this is the few lines of type erasure we need (std::move_only_function is C++23).
// Plain value; not thread-safe; invoking an empty Task is a bug.
#pragma once

#include <memory>
#include <stop_token>
#include <type_traits>
#include <utility>

namespace stoker::exec::detail {

class Task {
 public:
  Task() = default;

  // Accepts callables taking a std::stop_token or nothing.
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, Task>>>
  explicit Task(F&& f) : impl_(std::make_unique<Model<std::decay_t<F>>>(std::forward<F>(f))) {}

  Task(Task&&) noexcept = default;
  Task& operator=(Task&&) noexcept = default;

  explicit operator bool() const { return impl_ != nullptr; }
  void operator()(std::stop_token stop) { impl_->call(std::move(stop)); }

 private:
  struct Concept {
    virtual ~Concept() = default;
    virtual void call(std::stop_token stop) = 0;
  };
  template <typename F>
  struct Model final : Concept {
    template <typename G>
    explicit Model(G&& g) : f(std::forward<G>(g)) {}
    void call(std::stop_token stop) override {
      if constexpr (std::is_invocable_v<F&, std::stop_token>) {
        f(std::move(stop));
      } else {
        static_assert(std::is_invocable_v<F&>, "a task takes () or (std::stop_token)");
        f();
      }
    }
    F f;
  };

  std::unique_ptr<Concept> impl_;
};

}  // namespace stoker::exec::detail
