// render.cc - C++ side of the test project.
#include <vector>

namespace demo {

template <typename T>
class Grid {
 public:
  explicit Grid(int w) : width_(w) {}
  ~Grid();
  T at(int x, int y) const {
    return cells_[y * width_ + x];
  }
  void resize(int w, int h);

 private:
  int width_;
  std::vector<T> cells_;
};

template <typename T>
Grid<T>::~Grid() {
  cells_.clear();
}

template <typename T>
void Grid<T>::resize(int w, int h) {
  width_ = w;
  cells_.resize(w * h);
}

}  // namespace demo

int render_all(demo::Grid<int> *g, int n) {
  int sum = 0;
  for (int i = 0; i < n; i++)
    sum += g->at(i, 0);
  return sum;
}
