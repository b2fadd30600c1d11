// Builds a model using acme::Swish, runs it with the installed plugins plus the one built
// here, checks the result against y = x * sigmoid(x), and writes the model to a file so
// the `minnow` command can run it too.
//   swish_demo PLUGIN_DIR [MODEL_OUT]
#include <minnow/minnow.h>

#include <cmath>
#include <cstdio>

int main(int argc, char** argv) {
  using namespace minnow;
  if (argc < 2) return std::fprintf(stderr, "usage: swish_demo PLUGIN_DIR [MODEL_OUT]\n"), 2;
  EngineOptions eo;
  eo.plugin_paths = {argv[1]};
  eo.use_environment = false;
  auto engine = Engine::create(eo);
  if (!engine) return std::fprintf(stderr, "%s\n", engine.status().message().c_str()), 1;

  ModelBuilder b("swish_demo");
  b.add_input("x", DataType::kFloat32, Shape{2, 3});
  b.add_node("Swish", {"x"}, {"s"}, {Attr::Float("beta", 1.f)}, "swish", "acme", 1);
  b.add_node("Relu", {"s"}, {"y"});  // a standard op after it, run by cpu_dense
  b.add_output("y");
  if (argc > 2) {
    Status w = b.write(argv[2]);
    if (!w) return std::fprintf(stderr, "%s\n", w.message().c_str()), 1;
  }
  auto model = b.build();
  if (!model) return std::fprintf(stderr, "%s\n", model.status().message().c_str()), 1;
  auto prepared = engine.value()->prepare(model.value());
  if (!prepared) return std::fprintf(stderr, "%s\n", prepared.status().message().c_str()), 1;
  for (const auto& c : prepared.value()->choices())
    std::printf("%s -> %s (%s)\n", model.value()->graph().nodes[c.node].op.c_str(), c.backend.c_str(), c.kernel.c_str());
  auto session = Session::create(prepared.value());
  if (!session) return std::fprintf(stderr, "%s\n", session.status().message().c_str()), 1;
  const std::vector<float> x = {-2, -1, 0, 0.5f, 1, 3};
  auto out = session.value()->run({Tensor::from_vector<float>({2, 3}, x)});
  if (!out) return std::fprintf(stderr, "%s\n", out.status().message().c_str()), 1;
  int bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    float want = std::max(0.f, x[i] / (1.f + std::exp(-x[i])));
    float got = out.value()[0].data<float>()[i];
    std::printf("x=%g y=%g\n", x[i], got);
    bad += std::fabs(got - want) > 1e-6f;
  }
  return bad ? 1 : 0;
}
