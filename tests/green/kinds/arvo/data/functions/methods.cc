// C++ shapes (test data).
#include <string>
#include <vector>

extern "C" {
int c_entry(int x) {
  return x + 1;
}
}

namespace outer {
namespace inner {

class Buffer {
 public:
  Buffer() = default;
  ~Buffer() {
    data_.clear();
  }
  bool operator==(const Buffer &o) const {
    return data_ == o.data_;
  }
  size_t append(const char *p, size_t n);

 private:
  struct Chunk {
    int size() const { return 4; }
  };
  std::string data_;
};

size_t Buffer::append(const char *p, size_t n) {
  auto add = [&](char c) {
    data_.push_back(c);
  };
  for (size_t i = 0; i < n; i++)
    add(p[i]);
  return data_.size();
}

}  // namespace inner
}  // namespace outer

template <typename T>
static T clamp_value(T v, T lo, T hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

std::vector<int> &registry() {
  static std::vector<int> r;
  return r;
}
