// Builds y = Relu(Square(x)) in code and runs it with the installed plugins (found
// relative to the installed libminnow) plus the plugin built here.
#include <minnow/minnow.h>

#include <cstdio>

int main(int argc, char** argv) {
  using namespace minnow;
  if (argc < 2) return 2;
  EngineOptions eo;
  eo.plugin_paths = {argv[1]};
  eo.use_environment = false;
  auto engine = Engine::create(eo);
  if (!engine) return std::fprintf(stderr, "%s\n", engine.status().message().c_str()), 1;
  ModelBuilder b("consumer");
  b.add_input("x", DataType::kFloat32, Shape{4});
  b.add_node("Square", {"x"}, {"s"}, {}, "square", "acme", 1);
  b.add_node("Relu", {"s"}, {"y"});
  b.add_output("y");
  auto model = b.build();
  if (!model) return std::fprintf(stderr, "%s\n", model.status().message().c_str()), 1;
  auto pm = engine.value()->prepare(model.value());
  if (!pm) return std::fprintf(stderr, "%s\n", pm.status().message().c_str()), 1;
  auto s = Session::create(pm.value());
  auto out = s.value()->run({Tensor::from_vector<float>({4}, {1, -2, 3, -4})});
  if (!out) return std::fprintf(stderr, "%s\n", out.status().message().c_str()), 1;
  const float* y = out.value()[0].data<float>();
  std::printf("%g %g %g %g\n", y[0], y[1], y[2], y[3]);
  for (const auto& c : pm.value()->choices()) std::printf("%s -> %s\n", model.value()->graph().nodes[c.node].op.c_str(), c.backend.c_str());
  return (y[0] == 1 && y[1] == 4 && y[2] == 9 && y[3] == 16) ? 0 : 1;
}
