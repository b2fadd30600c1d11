#!/usr/bin/python3
"""Exports the benchmark models of issue 4 to ONNX opset 13 (bench/compare.sh runs this).

squeezenet1_1, mobilenet_v2, resnet18, resnet50 (torchvision, input 1x3x224x224) and a
2-layer LSTM (input 64, hidden 256, 50 steps, batch 1) followed by Linear(256, 10).
Weights are random (fixed seed): there is no network to fetch pretrained ones, and latency
does not depend on the values. BatchNorm statistics are randomised too, so a folded
BatchNorm is not an identity and numerical differences between engines show.

  /usr/bin/python3 bench/export_models.py [OUT_DIR]   (default ~/.cache/minnow-bench)

Needs Debian's python3-torchvision and python3-onnx (bench/install-deps.sh).
Models already exported with the same recipe are kept (a stamp per model).
"""
import hashlib
import json
import os
import sys

try:
    import torch
    import torchvision
    import onnx
except ImportError as e:  # one clear line, not a traceback
    sys.exit(f"export_models: {e.name} missing: run bench/install-deps.sh "
             "(python3-torchvision python3-onnx)")

OPSET = 13
SEED = 20261201


class LstmClassifier(torch.nn.Module):
    """2-layer LSTM over 50 steps of 64 features, last step -> Linear(256, 10)."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(input_size=64, hidden_size=256, num_layers=2)
        self.fc = torch.nn.Linear(256, 10)

    def forward(self, x):  # x: [50, 1, 64] (seq, batch, features), as ONNX LSTM wants
        y, _ = self.lstm(x)
        return self.fc(y[-1])


def randomise_batchnorm(model):
    g = torch.Generator().manual_seed(SEED + 1)
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(n, generator=g) * 0.1)


MODELS = {
    "squeezenet1_1": (lambda: torchvision.models.squeezenet1_1(), (1, 3, 224, 224)),
    "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(), (1, 3, 224, 224)),
    "resnet18": (lambda: torchvision.models.resnet18(), (1, 3, 224, 224)),
    "resnet50": (lambda: torchvision.models.resnet50(), (1, 3, 224, 224)),
    "lstm": (LstmClassifier, (50, 1, 64)),
}


def recipe_stamp():
    # Re-export when this script, torch or the opset changes.
    h = hashlib.sha256(open(__file__, "rb").read())
    h.update(f"{torch.__version__} {torchvision.__version__} {OPSET}".encode())
    return h.hexdigest()[:16]


def export(name, out_dir):
    path = os.path.join(out_dir, name + ".onnx")
    stamp_path = path + ".stamp"
    stamp = recipe_stamp()
    if os.path.exists(path) and os.path.exists(stamp_path) and open(stamp_path).read() == stamp:
        return path, False
    make, shape = MODELS[name]
    torch.manual_seed(SEED)
    model = make().eval()
    randomise_batchnorm(model)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(SEED + 2))
    tmp = path + ".tmp"
    with torch.no_grad():
        torch.onnx.export(model, (x,), tmp, opset_version=OPSET, input_names=["input"],
                          output_names=["output"], do_constant_folding=True)
    onnx.checker.check_model(onnx.load(tmp))
    os.replace(tmp, path)  # never a half-written model under the final name
    with open(stamp_path, "w") as f:
        f.write(stamp)
    return path, True


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/minnow-bench")
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    index = []
    for name in MODELS:
        path, fresh = export(name, out_dir)
        print(f"{'exported' if fresh else 'cached  '} {path}")
        index.append({"name": name, "file": os.path.basename(path), "input": "input",
                      "shape": list(MODELS[name][1])})
    # What bench/compare.js reads: which models, and the shape of each one's input.
    with open(os.path.join(out_dir, "models.json.tmp"), "w") as f:
        json.dump(index, f, indent=1)
    os.replace(os.path.join(out_dir, "models.json.tmp"), os.path.join(out_dir, "models.json"))


if __name__ == "__main__":
    main()
