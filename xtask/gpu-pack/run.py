#!/usr/bin/env python3
"""tpsmeter's GPU pack: our engine and llama.cpp on this machine's GPU, offline, one command.

    python3 run.py [--quick] [--skip-cuda] [--out DIR]

Made by `cargo xtask gpu-pack` (see its README.txt beside this file). Needs only what a bare
NVIDIA machine has: Python 3 (standard library), the driver, and for the CUDA peer nvcc,
CMake and ninja or make. Nothing is fetched: the engine's binary, the Vulkan loader and
llama.cpp's source travel in the pack, and the models are synthetic (a real model's exact
shapes and tensor types, seeded random weights: `tpsmeter synthetic`), written here.

Steps, each timed, each one that cannot run reported as skipped with the reason:
  1. the machine: GPU, driver, CPU, the Vulkan adapter our engine gets and its limits;
  2. the synthetic GGUF files (SmolLM2-135M and Qwen2.5-0.5B, Q4_1 and Q8_0);
  3. our engine natively on the Vulkan adapter (`tpsmeter run --backend gpu`): decode at
     contexts 64, 512 and 2048, prefill of 512, every per-token counter, and a sweep of the
     decode steps kept in flight (K);
  4. llama.cpp's CUDA backend, built here from the pruned source for this GPU's
     architecture only, and its `llama-bench` on the same files; and llama.cpp's Vulkan
     `llama-bench`, where the pack carries one (built where the pack was made);
  5. one table with the ratios, printed and written as results.json and results.txt.
"""

import argparse
import json
import lzma
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NVIDIA_ICD = "/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json"
MODELS = [("SmolLM2-135M", "Q4_1"), ("SmolLM2-135M", "Q8_0"), ("Qwen2.5-0.5B", "Q4_1"), ("Qwen2.5-0.5B", "Q8_0")]


class Plan:
    def __init__(self, quick):
        self.quick = quick
        # Decode is measured after a prompt of this many tokens (the synthetic tokenizer makes
        # one token per byte of "x"), for `decode` tokens.
        self.contexts = [64, 512] if quick else [64, 512, 2048]
        self.decode = 16 if quick else 64
        self.prefill = 128 if quick else 512
        self.ks = [1, 2] if quick else [1, 2, 3, 4]
        # Two processes per figure: 84 launches at three would not fit 9 minutes beside the
        # CUDA build (docs/performance.md, "the GPU pack").
        self.runs = 1 if quick else 2
        self.models = MODELS[:1] + MODELS[2:3] if quick else MODELS


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def sh(cmd, env=None, cwd=None, timeout=None):
    """Runs cmd; returns (code, stdout, stderr)."""
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except FileNotFoundError as e:
        return 127, "", str(e)
    except subprocess.TimeoutExpired as e:
        return 124, e.stdout or "", f"timed out after {timeout} s"


def find(name, *extra):
    found = shutil.which(name)
    if found:
        return found
    for path in extra:
        if os.path.exists(path):
            return path
    return None


class Pack:
    def __init__(self, args):
        self.plan = Plan(args.quick)
        self.out = os.path.abspath(args.out)
        self.work = os.path.join(self.out, "work")
        os.makedirs(self.work, exist_ok=True)
        self.steps = []
        self.rows = []
        self.machine = {}
        self.skip_cuda = args.skip_cuda
        self.pack_loader = args.pack_loader
        self.env = dict(os.environ)

    def step(self, name, fn):
        t0 = time.time()
        log(f"{name} ...")
        try:
            status = fn() or "ok"
        except Exception as e:  # a step's failure is reported, never hides the rest
            status = f"failed: {e}"
        dt = time.time() - t0
        self.steps.append({"step": name, "status": status, "seconds": round(dt, 1)})
        log(f"{name}: {status} ({dt:.1f} s)")

    # 1. The machine.
    def machine_facts(self):
        m = self.machine
        m["host"] = platform.node()
        m["cpus"] = os.cpu_count()
        m["kernel"] = platform.release()
        code, out, _ = sh(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,compute_cap", "--format=csv,noheader"])
        if code == 0 and out.strip():
            name, driver, mem, cap = [x.strip() for x in out.strip().splitlines()[0].split(",")]
            m["gpu"] = {"name": name, "driver": driver, "memory": mem, "compute_cap": cap}
        else:
            m["gpu"] = None
        # The Vulkan loader: the system's, else the pack's; the NVIDIA driver's ICD where the
        # image keeps it outside the loader's search path.
        code, out, _ = sh(["/sbin/ldconfig", "-p"])
        if "libvulkan.so.1" not in out or self.pack_loader:
            lib = os.path.join(HERE, "lib")
            self.env["LD_LIBRARY_PATH"] = lib + (":" + self.env["LD_LIBRARY_PATH"] if self.env.get("LD_LIBRARY_PATH") else "")
            m["vulkan_loader"] = "the pack's (" + os.path.join(lib, "libvulkan.so.1") + ")"
        else:
            m["vulkan_loader"] = "the system's"
        if os.path.exists(NVIDIA_ICD) and "VK_ICD_FILENAMES" not in self.env:
            self.env["VK_ICD_FILENAMES"] = NVIDIA_ICD
            self.env["VK_DRIVER_FILES"] = NVIDIA_ICD
            m["vulkan_icd"] = NVIDIA_ICD
        self.tpsmeter = os.path.join(self.work, "tpsmeter")
        if not os.path.exists(self.tpsmeter):
            with lzma.open(os.path.join(HERE, "bin", "tpsmeter.xz")) as src, open(self.tpsmeter, "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.chmod(self.tpsmeter, 0o755)
        code, out, err = sh([self.tpsmeter, "--version"], env=self.env)
        if code != 0:
            raise RuntimeError(f"the pack's tpsmeter does not start here: {err.strip()[:400]}")
        m["tpsmeter"] = out.strip()
        return f"GPU {m['gpu']['name'] if m['gpu'] else 'none (nvidia-smi absent)'}; Vulkan loader {m['vulkan_loader']}"

    # 2. The models.
    def models(self):
        self.files = {}
        for name, quant in self.plan.models:
            path = os.path.join(self.work, f"{name}.{quant}.synthetic.gguf")
            if not os.path.exists(path):
                code, _, err = sh([self.tpsmeter, "synthetic", f"{name}:{quant}", "--out", path], env=self.env)
                if code != 0:
                    raise RuntimeError(err.strip()[:400])
            self.files[(name, quant)] = path
        return f"{len(self.files)} files"

    def ours_once(self, path, prompt_tokens, decode, k):
        cmd = [self.tpsmeter, "run", "--backend", "gpu", "--model", path, "--prompt", "x" * prompt_tokens,
               "--max-tokens", str(decode), "--ignore-eos", "--warmup", "1", "--json", "--context", "4096"]
        if k is not None:
            cmd += ["--in-flight", str(k)]
        code, out, err = sh(cmd, env=self.env, timeout=600)
        if code != 0:
            raise RuntimeError(f"tpsmeter run: {err.strip()[-400:]}")
        return json.loads(out)

    def ours(self, path, prompt_tokens, decode, k=None):
        """Medians of the plan's runs: decode and prefill tok/s, and the per-token counters."""
        runs = [self.ours_once(path, prompt_tokens, decode, k) for _ in range(self.plan.runs)]
        fig = [r["figures"] for r in runs]
        cost = [r.get("per_token_cost") or {} for r in runs]
        med = lambda xs: statistics.median([x for x in xs if isinstance(x, (int, float))]) if any(isinstance(x, (int, float)) for x in xs) else None
        last = runs[-1]
        self.machine.setdefault("adapter", last.get("adapter"))
        self.machine.setdefault("adapter_info", last.get("adapter_info"))
        return {
            "prompt_tokens": fig[-1]["prompt_tokens"],
            "decode_tps": med([f.get("decode_tps") for f in fig]),
            "prefill_tps": med([f.get("prefill_tps") for f in fig]),
            "ttft_ms": med([f["ttft_s"] * 1e3 for f in fig]),
            "in_flight": last["backend"].get("in_flight"),
            "per_token_cost": {key: med([c.get(key) for c in cost]) for key in
                               ["dispatches", "passes", "submits", "pipeline_changes", "bind_group_changes", "bytes_written",
                                "bytes_read", "encode_ms", "host_wait_ms", "in_flight"]},
        }

    # 3. Our engine.
    def our_engine(self):
        self.ours_results = {}
        for key, path in self.files.items():
            r = {"contexts": {}, "k_sweep": {}}
            for ctx in self.plan.contexts:
                r["contexts"][ctx] = self.ours(path, ctx, self.plan.decode)
            r["prefill"] = self.ours(path, self.plan.prefill, 1)
            first = r["contexts"][self.plan.contexts[0]]
            for k in self.plan.ks:
                # The adapter's default K was measured with the contexts already.
                if k == first["in_flight"]:
                    r["k_sweep"][k] = first
                else:
                    r["k_sweep"][k] = self.ours(path, self.plan.contexts[0], self.plan.decode, k)
            self.ours_results[key] = r
            log(f"  ours {key[0]}:{key[1]}: decode@{self.plan.contexts[0]} {r['contexts'][self.plan.contexts[0]]['decode_tps']:.1f} tok/s")
        return f"{len(self.ours_results)} models"

    # 4. llama.cpp CUDA.
    def llama_cuda(self):
        self.llama = {}
        if self.skip_cuda:
            return "skipped: --skip-cuda"
        nvcc = find("nvcc", "/usr/local/cuda/bin/nvcc")
        if not nvcc:
            return "skipped: no nvcc (the CUDA toolkit) on this machine"
        gpu = self.machine.get("gpu")
        if not gpu:
            return "skipped: no NVIDIA GPU (nvidia-smi)"
        cmake = find("cmake")
        if not cmake:
            return "skipped: no cmake"
        arch = gpu["compute_cap"].replace(".", "")
        src = os.path.join(self.work, "llama.cpp")
        if not os.path.exists(src):
            with tarfile.open(os.path.join(HERE, "src", "llama.cpp.tar.xz")) as t:
                t.extractall(self.work)
        build = os.path.join(self.work, "llama-cuda")
        gen = ["-G", "Ninja"] if find("ninja") else []
        jobs = str(os.cpu_count() or 4)
        flags = ["-DCMAKE_BUILD_TYPE=Release", "-DGGML_CUDA=ON", f"-DCMAKE_CUDA_ARCHITECTURES={arch}",
                 f"-DCMAKE_CUDA_COMPILER={nvcc}", "-DGGML_NATIVE=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF",
                 "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF",
                 "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_BUILD_TOOLS=ON", "-DBUILD_SHARED_LIBS=OFF",
                 # FlashAttention's template instances are most of ggml-cuda's compile time; at
                 # these contexts llama-bench runs attention without them (its default `auto`).
                 "-DGGML_CUDA_FA=OFF"]
        code, out, err = sh([cmake, "-S", src, "-B", build] + gen + flags, timeout=300)
        if code != 0:
            raise RuntimeError(f"cmake configure: {(out + err).strip()[-600:]}")
        code, out, err = sh([cmake, "--build", build, "--target", "llama-bench", "-j", jobs], timeout=900)
        if code != 0:
            raise RuntimeError(f"cmake build: {(out + err).strip()[-600:]}")
        self.llama = self.bench_files(os.path.join(build, "bin", "llama-bench"))
        return f"built for sm_{arch}; {len(self.llama)} models"

    # 4b. llama.cpp Vulkan, where the pack carries it.
    def llama_vulkan(self):
        self.llama_vk = {}
        packed = os.path.join(HERE, "bin", "llama-bench-vulkan.xz")
        if not os.path.exists(packed):
            return "skipped: the pack carries no Vulkan llama-bench (cargo xtask llama-vulkan where the pack is made)"
        bench = os.path.join(self.work, "llama-bench-vulkan")
        if not os.path.exists(bench):
            with lzma.open(packed) as src, open(bench, "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.chmod(bench, 0o755)
        self.llama_vk = self.bench_files(bench, env=self.env)
        return f"{len(self.llama_vk)} models"

    def bench_files(self, bench, env=None):
        """`llama-bench` on every model file: prefill of the plan's length, decode at each context."""
        out = {}
        depths = ",".join(str(c) for c in self.plan.contexts)
        for key, path in self.files.items():
            pp = self.llama_bench(bench, path, ["-p", str(self.plan.prefill), "-n", "0"], env=env)
            tg = self.llama_bench(bench, path, ["-p", "0", "-n", str(self.plan.decode), "-d", depths], env=env)
            out[key] = {
                "prefill_tps": pp.get((self.plan.prefill, 0, 0)),
                "decode_tps": {c: tg.get((0, self.plan.decode, c)) for c in self.plan.contexts},
            }
        return out

    def llama_bench(self, bench, path, extra, env=None):
        code, out, err = sh([bench, "-m", path, "-ngl", "99", "-r", str(max(self.plan.runs, 2)), "-o", "json"] + extra, env=env, timeout=600)
        if code != 0:
            raise RuntimeError(f"llama-bench: {err.strip()[-400:]}")
        rows = json.loads(out)
        return {(r["n_prompt"], r["n_gen"], r.get("n_depth", 0)): r["avg_ts"] for r in rows}

    # 5. The table.
    def table(self):
        f = lambda v, d=1: "n/a" if v is None else f"{v:.{d}f}"
        ratio = lambda a, b: None if a is None or not b else a / b
        lines = []
        m = self.machine
        lines.append(f"tpsmeter GPU pack, {time.strftime('%Y-%m-%d %H:%M')}, host {m.get('host')}, {m.get('cpus')} CPUs")
        lines.append(f"GPU: {m.get('gpu')}")
        lines.append(f"our adapter: {m.get('adapter')} {m.get('adapter_info')}")
        lines.append(f"tpsmeter: {m.get('tpsmeter')}; models are synthetic (real shapes and types, random weights)")
        lines.append("")
        head = f"{'model':<20}" + "".join(f"{'ours tg@' + str(c):>12}" for c in self.plan.contexts) + f"{'ours pp' + str(self.plan.prefill):>12}"
        head += "".join(f"{'cuda tg@' + str(c):>12}" for c in self.plan.contexts) + f"{'cuda pp':>10}"
        head += "".join(f"{'vk tg@' + str(c):>12}" for c in self.plan.contexts) + f"{'vk pp':>10}"
        head += f"{'tg@' + str(self.plan.contexts[0]) + ' ours/cuda':>18}{'ours/vk':>9}"
        lines.append(head)
        for key in self.files:
            o = self.ours_results.get(key)
            if not o:
                continue
            c = self.llama.get(key, {})
            row = f"{key[0] + ':' + key[1]:<20}"
            row += "".join(f"{f(o['contexts'][ctx]['decode_tps']):>12}" for ctx in self.plan.contexts)
            row += f"{f(o['prefill']['prefill_tps']):>12}"
            row += "".join(f"{f((c.get('decode_tps') or {}).get(ctx)):>12}" for ctx in self.plan.contexts)
            row += f"{f(c.get('prefill_tps')):>10}"
            v = self.llama_vk.get(key, {})
            row += "".join(f"{f((v.get('decode_tps') or {}).get(ctx)):>12}" for ctx in self.plan.contexts)
            row += f"{f(v.get('prefill_tps')):>10}"
            first = self.plan.contexts[0]
            row += f"{f(ratio(o['contexts'][first]['decode_tps'], (c.get('decode_tps') or {}).get(first)), 2):>18}"
            row += f"{f(ratio(o['contexts'][first]['decode_tps'], (v.get('decode_tps') or {}).get(first)), 2):>9}"
            lines.append(row)
        lines.append("")
        lines.append("steps in flight (ours, decode tok/s at context %d; host wait ms per token; encode ms per token):" % self.plan.contexts[0])
        for key, o in self.ours_results.items():
            parts = []
            for k, r in o["k_sweep"].items():
                c = r["per_token_cost"]
                parts.append(f"K={k} {f(r['decode_tps'])} tok/s, wait {f(c.get('host_wait_ms'), 3)}, encode {f(c.get('encode_ms'), 3)}")
            lines.append(f"  {key[0]}:{key[1]}: " + "; ".join(parts))
        lines.append("")
        lines.append("per decoded token (ours, context %d): " % self.plan.contexts[0])
        for key, o in self.ours_results.items():
            c = o["contexts"][self.plan.contexts[0]]["per_token_cost"]
            lines.append(f"  {key[0]}:{key[1]}: " + ", ".join(f"{k} {f(v, 3)}" for k, v in c.items()))
        lines.append("")
        lines.append("steps: " + "; ".join(f"{s['step']} {s['status']} ({s['seconds']} s)" for s in self.steps))
        text = "\n".join(lines)
        print(text)
        with open(os.path.join(self.out, "results.txt"), "w") as fh:
            fh.write(text + "\n")
        doc = {
            "machine": m,
            "plan": vars(self.plan),
            "steps": self.steps,
            "ours": {f"{k[0]}:{k[1]}": v for k, v in self.ours_results.items()},
            "llama_cuda": {f"{k[0]}:{k[1]}": v for k, v in self.llama.items()},
            "llama_vulkan": {f"{k[0]}:{k[1]}": v for k, v in self.llama_vk.items()},
            "synthetic": True,
        }
        with open(os.path.join(self.out, "results.json"), "w") as fh:
            json.dump(doc, fh, indent=2, default=str)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="short runs: two models, contexts 64 and 512, K 1 and 2 (for a software adapter)")
    ap.add_argument("--skip-cuda", action="store_true", help="do not build llama.cpp's CUDA backend")
    ap.add_argument("--pack-loader", action="store_true", help="use the pack's Vulkan loader even where the machine has one")
    ap.add_argument("--out", default=os.path.join(HERE, "results"), help="where results and the work files go")
    args = ap.parse_args()
    t0 = time.time()
    p = Pack(args)
    p.step("machine", p.machine_facts)
    p.step("synthetic models", p.models)
    p.step("our engine (Vulkan)", p.our_engine)
    p.step("llama.cpp CUDA", p.llama_cuda)
    p.step("llama.cpp Vulkan", p.llama_vulkan)
    p.ours_results = getattr(p, "ours_results", {})
    p.llama = getattr(p, "llama", {})
    p.llama_vk = getattr(p, "llama_vk", {})
    p.files = getattr(p, "files", {})
    p.step("table", p.table)
    log(f"done in {time.time() - t0:.0f} s; results in {p.out}")
    failed = [s for s in p.steps if s["status"].startswith("failed")]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
