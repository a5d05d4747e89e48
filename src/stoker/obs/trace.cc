#include "stoker/obs/trace.h"

#include "stoker/base/json_text.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

namespace stoker::obs {

Status TraceOptions::validate() const {
  if (max_events < 1) return invalid_argument("trace: max_events must be >= 1");
  if (sample_every < 1) return invalid_argument("trace: sample_every must be >= 1");
  return ok_status();
}

enum Kind : std::uint8_t { kSpan, kAsync, kCounter };

struct Tracer::Event {
  std::int64_t ts = 0, dur = 0;  // ns; a counter's value is in `value`
  const char* name = nullptr;
  const char* arg = nullptr;
  std::int64_t value = 0;
  std::uint64_t id = 0;          // async: the span's id; counter: its id
  Kind kind = kSpan;
};

// Events in chunks, so a growing buffer never copies what it holds (no latency spike on the
// thread that records).
struct Tracer::Thread {
  static constexpr std::size_t kChunk = 1024;
  std::mutex mu;
  int tid = 0;
  std::string name;
  bool named = false;  // by name_thread
  std::vector<std::unique_ptr<Event[]>> chunks;
  std::size_t size = 0;
  std::int64_t quota = 0;  // events this thread may still add without asking the tracer

  void push(const Event& e) {
    if (size == chunks.size() * kChunk) chunks.push_back(std::make_unique<Event[]>(kChunk));
    chunks[size / kChunk][size % kChunk] = e;
    ++size;
  }
  const Event& at(std::size_t i) const { return chunks[i / kChunk][i % kChunk]; }
};

namespace {

std::atomic<std::uint64_t> g_next_tracer_id{1};

// A thread's buffers in the tracers it recorded to, most recent first; an entry of a destroyed
// tracer is never dereferenced (ids are never reused), only pushed out.
struct CacheEntry {
  std::uint64_t tracer = 0;
  void* thread = nullptr;
};
constexpr int kCache = 8;
thread_local CacheEntry t_cache[kCache];
thread_local int t_cache_next = 0;

// Microseconds with three decimals, from integer nanoseconds: exact, so a child's end never
// rounds past its parent's.
void append_us(std::string& out, std::int64_t ns) {
  if (ns < 0) ns = 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000),
                static_cast<long long>(ns % 1000));
  out += buf;
}

}  // namespace

Tracer::Tracer(const TraceOptions& options)
    : options_(options),
      id_(g_next_tracer_id.fetch_add(1)),
      origin_ns_(now_ns()),
      pid_(static_cast<int>(::getpid())),
      left_(options.max_events) {
  STOKER_CHECK(options_.validate().ok(), "trace options must be validated by the caller");
  // Threads take their share of the cap in chunks (one atomic per chunk, not per event); small
  // chunks for small caps, so a few threads cannot strand most of it.
  chunk_ = std::clamp<std::int64_t>(options_.max_events / 64, 1, 256);
}

Tracer::~Tracer() = default;

Tracer::Thread* Tracer::local() {
  for (CacheEntry& c : t_cache) {
    if (c.tracer == id_) return static_cast<Thread*>(c.thread);
  }
  auto t = std::make_unique<Thread>();
  t->tid = static_cast<int>(::syscall(SYS_gettid));
  char name[32] = {};
  if (pthread_getname_np(pthread_self(), name, sizeof name) != 0 || name[0] == '\0') {
    std::snprintf(name, sizeof name, "thread");
  }
  t->name = name;
  Thread* raw = t.get();
  {
    std::lock_guard lock(mu_);
    threads_.push_back(std::move(t));
  }
  t_cache[t_cache_next] = {id_, raw};
  t_cache_next = (t_cache_next + 1) % kCache;
  return raw;
}

void Tracer::append(const Event& e) {
  Thread* t = local();
  std::lock_guard lock(t->mu);
  if (t->quota == 0) {
    const std::int64_t before = left_.fetch_sub(chunk_, std::memory_order_relaxed);
    t->quota = std::clamp<std::int64_t>(before, 0, chunk_);
    if (t->quota == 0) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  --t->quota;
  t->push(e);
}

void Tracer::span(const char* name, std::int64_t begin_ns, std::int64_t end_ns, const char* arg,
                  std::int64_t value) {
  Event e;
  e.ts = begin_ns;
  e.dur = std::max<std::int64_t>(0, end_ns - begin_ns);
  e.name = name;
  e.arg = arg;
  e.value = value;
  append(e);
}

void Tracer::async_span(const char* name, std::uint64_t id, std::int64_t begin_ns,
                        std::int64_t end_ns) {
  Event e;
  e.kind = kAsync;
  e.ts = begin_ns;
  e.dur = std::max<std::int64_t>(0, end_ns - begin_ns);
  e.name = name;
  e.id = id;
  append(e);
}

int Tracer::counter_id(const std::string& name) {
  std::lock_guard lock(mu_);
  for (std::size_t i = 0; i < counter_names_.size(); ++i) {
    if (counter_names_[i] == name) return static_cast<int>(i);
  }
  if (counter_names_.size() == kMaxCounters) return -1;  // counter() ignores -1
  counter_names_.push_back(name);
  return static_cast<int>(counter_names_.size() - 1);
}

void Tracer::counter(int id, std::int64_t value, std::int64_t ts_ns) {
  if (id < 0 || id >= kMaxCounters) return;
  if (options_.sample_every > 1 &&
      counter_calls_[id].fetch_add(1, std::memory_order_relaxed) % options_.sample_every != 0) {
    return;
  }
  Event e;
  e.kind = kCounter;
  e.ts = ts_ns;
  e.value = value;
  e.id = static_cast<std::uint64_t>(id);
  append(e);
}

void Tracer::name_thread(const std::string& name) {
  Thread* t = local();
  std::lock_guard lock(t->mu);
  t->name = name;
  t->named = true;
}

void Tracer::default_thread_name(const std::string& name) {
  Thread* t = local();
  std::lock_guard lock(t->mu);
  if (!t->named) t->name = name;
}

void Tracer::set_process_name(std::string name) {
  std::lock_guard lock(mu_);
  process_name_ = std::move(name);
}

std::int64_t Tracer::recorded() const {
  std::lock_guard lock(mu_);
  std::int64_t n = 0;
  for (const auto& t : threads_) {
    std::lock_guard tl(t->mu);
    n += static_cast<std::int64_t>(t->size);
  }
  return n;
}

// Per track, events in time order (a parent before the children that start with it); counters
// per counter, in time order.
template <typename Out>
void Tracer::emit(Out& out) const {
  std::string s;
  std::vector<std::string> counter_names;
  std::vector<std::pair<int, std::string>> tracks;
  std::vector<std::vector<Event>> per_track;
  std::string process;
  {
    std::lock_guard lock(mu_);
    counter_names = counter_names_;
    process = process_name_;
    for (const auto& t : threads_) {
      std::lock_guard tl(t->mu);
      tracks.emplace_back(t->tid, t->name);
      per_track.emplace_back();
      per_track.back().reserve(t->size);
      for (std::size_t i = 0; i < t->size; ++i) per_track.back().push_back(t->at(i));
    }
  }
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"format\":\"stoker trace v1\","
                "\"sample_every\":%lld,\"max_events\":%lld,\"dropped_events\":%lld},"
                "\"traceEvents\":[\n",
                static_cast<long long>(options_.sample_every),
                static_cast<long long>(options_.max_events), static_cast<long long>(dropped()));
  s += buf;
  s += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(pid_) +
       ",\"tid\":0,\"args\":{\"name\":";
  append_json_string(s, process);
  s += "}}";
  // A thread that recorded to the tracer more than once (e.g. pushed out of its cache) has
  // several buffers: one track per tid, merged.
  std::map<int, std::pair<std::string, std::vector<Event>>> by_tid;
  std::vector<Event> counters, asyncs;
  for (std::size_t i = 0; i < tracks.size(); ++i) {
    auto& [name, events] = by_tid[tracks[i].first];
    if (name.empty()) name = tracks[i].second;
    for (const Event& e : per_track[i]) {
      if (e.kind == kCounter) counters.push_back(e);
      else if (e.kind == kAsync) asyncs.push_back(e);
      else events.push_back(e);
    }
  }
  const std::string pid = std::to_string(pid_);
  for (auto& [tid, track] : by_tid) {
    s += ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + pid + ",\"tid\":" +
         std::to_string(tid) + ",\"args\":{\"name\":";
    append_json_string(s, track.first);
    s += "}}";
  }
  for (auto& [tid, track] : by_tid) {
    std::vector<Event>& events = track.second;
    std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur;
    });
    const std::string head = ",\n{\"ph\":\"X\",\"pid\":" + pid + ",\"tid\":" + std::to_string(tid);
    for (const Event& e : events) {
      s += head;
      s += ",\"name\":";
      append_json_string(s, e.name);
      s += ",\"ts\":";
      append_us(s, e.ts - origin_ns_);
      s += ",\"dur\":";
      append_us(s, e.dur);
      if (e.arg != nullptr) {
        s += ",\"args\":{";
        append_json_string(s, e.arg);
        s += ":" + std::to_string(e.value) + "}";
      }
      s += "}";
      if (s.size() > (1 << 16)) {
        out(s);
        s.clear();
      }
    }
  }
  std::stable_sort(asyncs.begin(), asyncs.end(),
                   [](const Event& a, const Event& b) { return a.ts < b.ts; });
  for (const Event& e : asyncs) {
    for (int end = 0; end < 2; ++end) {
      s += ",\n{\"ph\":\"";
      s += end ? "e" : "b";
      s += "\",\"cat\":\"stoker\",\"pid\":" + pid + ",\"tid\":0,\"id\":\"0x";
      std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(e.id));
      s += buf;
      s += "\",\"name\":";
      append_json_string(s, e.name);
      s += ",\"ts\":";
      append_us(s, e.ts - origin_ns_ + (end ? e.dur : 0));
      s += "}";
    }
    if (s.size() > (1 << 16)) {
      out(s);
      s.clear();
    }
  }
  std::stable_sort(counters.begin(), counters.end(), [](const Event& a, const Event& b) {
    return a.id != b.id ? a.id < b.id : a.ts < b.ts;
  });
  for (const Event& e : counters) {
    s += ",\n{\"ph\":\"C\",\"pid\":" + pid + ",\"tid\":0,\"name\":";
    append_json_string(s, counter_names[e.id]);
    s += ",\"ts\":";
    append_us(s, e.ts - origin_ns_);
    s += ",\"args\":{\"value\":" + std::to_string(e.value) + "}}";
    if (s.size() > (1 << 16)) {
      out(s);
      s.clear();
    }
  }
  s += "\n]}\n";
  out(s);
}

std::string Tracer::json() const {
  std::string all;
  auto sink = [&all](const std::string& part) { all += part; };
  emit(sink);
  return all;
}

Status Tracer::write(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) {
    const int err = errno;
    std::string why = "writing the trace " + path + ": " + std::strerror(err);
    return err == EACCES || err == EPERM ? permission_denied(why) : not_found(why);
  }
  bool ok = true;
  auto sink = [&](const std::string& part) {
    ok = ok && std::fwrite(part.data(), 1, part.size(), f) == part.size();
  };
  emit(sink);
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    const std::string why = "writing the trace " + path + ": " + std::strerror(err);
    // A full disk is not a missing file (issue #28: the summary names what happened).
    if (err == ENOSPC || err == EDQUOT || err == EFBIG) return resource_exhausted(why);
    return err == ENOENT ? not_found(why) : data_loss(why);
  }
  return ok_status();
}

}  // namespace stoker::obs
