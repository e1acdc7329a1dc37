//! The report's rows: parsed from `tpsmeter run --json`, `llama-bench -o json` and the
//! browser bench's JSON, and printed as a plain table or Markdown.

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

/// One line of the table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    pub runtime: String,
    pub backend: String,
    pub adapter: String,
    /// A CPU rasteriser (lavapipe/llvmpipe, SwiftShader): no GPU figure.
    pub software: bool,
    pub model: String,
    pub prompt_tokens: Option<u64>,
    pub gen_tokens: Option<u64>,
    pub prefill: Option<f64>,
    pub decode: Option<f64>,
    /// Runs behind each median.
    pub runs: usize,
    pub dispatches_per_token: Option<f64>,
    pub encode_ms_per_token: Option<f64>,
    /// The whole per-token cost object where the runtime reports one.
    pub per_token_cost: Option<Value>,
    /// Why a figure is missing, or what else a reader must know.
    pub note: String,
}

impl Row {
    pub fn failed(runtime: &str, backend: &str, model: &str, why: impl std::fmt::Display) -> Self {
        Row {
            runtime: runtime.into(),
            backend: backend.into(),
            model: model.into(),
            note: why.to_string(),
            ..Row::default()
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "runtime": self.runtime,
            "backend": self.backend,
            "adapter": self.adapter,
            "software_adapter": self.software,
            "model": self.model,
            "prompt_tokens": self.prompt_tokens,
            "gen_tokens": self.gen_tokens,
            "prefill_tok_s": self.prefill,
            "decode_tok_s": self.decode,
            "runs": self.runs,
            "dispatches_per_token": self.dispatches_per_token,
            "encode_ms_per_token": self.encode_ms_per_token,
            "per_token_cost": self.per_token_cost,
            "note": self.note,
        })
    }
}

/// Whether an adapter's name is a CPU rasteriser's.
pub fn is_software(name: &str) -> bool {
    let n = name.to_lowercase();
    ["llvmpipe", "lavapipe", "swiftshader", "softpipe", "warp"]
        .iter()
        .any(|s| n.contains(s))
}

pub fn median(v: &[f64]) -> Option<f64> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// About `n` tokens of text whose first word differs per `salt` (no engine reuses a cached
/// prefix across runs). The same text as `tests/browser/bench/gpu-report.mjs`.
pub fn prompt(n: usize, salt: usize) -> String {
    const FIRST: [&str; 8] = [
        "Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Golf", "Hotel",
    ];
    let body = "the sea and the sky ".repeat(n.div_ceil(5));
    let text = format!("{} {body}", FIRST[salt % 8]);
    text.split(' ').take(n).collect::<Vec<_>>().join(" ")
}

/// One `tpsmeter run --json` document.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeRun {
    pub adapter: String,
    pub backend: String,
    pub device_type: String,
    pub driver: String,
    pub prompt_tokens: Option<u64>,
    pub gen_tokens: Option<u64>,
    pub prefill: Option<f64>,
    pub decode: Option<f64>,
    pub per_token_cost: Option<Value>,
}

/// Reads `tpsmeter run --json`. `per_token_cost` and `adapter_info` are optional: older
/// CLIs lack them, and the table shows "-" for what is missing.
pub fn parse_run_json(text: &str) -> Result<NativeRun> {
    let v: Value = serde_json::from_str(text).context("tpsmeter run --json printed no JSON")?;
    let f = &v["figures"];
    if !f.is_object() {
        bail!("tpsmeter run --json has no figures");
    }
    let info = &v["adapter_info"];
    let s = |x: &Value| x.as_str().unwrap_or_default().to_string();
    let driver = [s(&info["driver"]), s(&info["driver_info"])]
        .into_iter()
        .filter(|d| !d.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    Ok(NativeRun {
        adapter: s(&v["adapter"]),
        backend: s(&info["backend"]),
        device_type: s(&info["device_type"]),
        driver,
        prompt_tokens: f["prompt_tokens"].as_u64(),
        gen_tokens: f["generated_tokens"].as_u64(),
        prefill: f["prefill_tps"].as_f64(),
        decode: f["decode_tps"].as_f64(),
        per_token_cost: v.get("per_token_cost").filter(|c| c.is_object()).cloned(),
    })
}

/// The native row of one model from its runs.
pub fn native_row(model: &str, runs: &[NativeRun]) -> Row {
    let Some(last) = runs.last() else {
        return Row::failed("tpsmeter (native)", "wgpu", model, "no run");
    };
    let cost = |key: &str| {
        median(
            &runs
                .iter()
                .filter_map(|r| r.per_token_cost.as_ref()?.get(key)?.as_f64())
                .collect::<Vec<_>>(),
        )
    };
    let mut adapter = last.adapter.clone();
    if !last.driver.is_empty() {
        adapter.push_str(&format!(" ({})", last.driver));
    }
    Row {
        runtime: "tpsmeter (native)".into(),
        backend: if last.backend.is_empty() {
            "wgpu".into()
        } else {
            format!("wgpu {}", last.backend)
        },
        software: last.device_type == "Cpu" || is_software(&last.adapter),
        adapter,
        model: model.into(),
        prompt_tokens: last.prompt_tokens,
        gen_tokens: last.gen_tokens,
        prefill: median(&runs.iter().filter_map(|r| r.prefill).collect::<Vec<_>>()),
        decode: median(&runs.iter().filter_map(|r| r.decode).collect::<Vec<_>>()),
        runs: runs.len(),
        dispatches_per_token: cost("dispatches"),
        encode_ms_per_token: cost("encode_ms"),
        per_token_cost: last.per_token_cost.clone(),
        note: if last.per_token_cost.is_none() {
            "this CLI reports no per_token_cost".into()
        } else {
            String::new()
        },
    }
}

/// Reads `llama-bench -o json`: one row with the prompt test's and the generation test's
/// medians (of `samples_ts`, one figure per repetition; the mean `avg_ts` where an older
/// llama-bench lacks them).
pub fn parse_llama_bench(text: &str, runtime: &str, backend: &str, model: &str) -> Result<Row> {
    let v: Value = serde_json::from_str(text).context("llama-bench printed no JSON")?;
    let tests = v.as_array().context("llama-bench's JSON is not a list")?;
    let mut row = Row {
        runtime: runtime.into(),
        backend: backend.into(),
        model: model.into(),
        ..Row::default()
    };
    for t in tests {
        let samples: Vec<f64> = t["samples_ts"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        let figure = median(&samples).or_else(|| t["avg_ts"].as_f64());
        row.runs = row.runs.max(samples.len());
        let (np, ng) = (t["n_prompt"].as_u64(), t["n_gen"].as_u64());
        if ng.is_some_and(|n| n > 0) {
            row.decode = figure;
            row.gen_tokens = ng;
        } else if np.is_some_and(|n| n > 0) {
            row.prefill = figure;
            row.prompt_tokens = np;
        }
        let gpu = t["gpu_info"].as_str().unwrap_or_default();
        let cpu = t["cpu_info"].as_str().unwrap_or_default();
        let backends = t["backends"].as_str().unwrap_or_default();
        row.adapter = if gpu.is_empty() { cpu } else { gpu }.to_string();
        if !backends.is_empty() && !row.backend.contains(backends) {
            row.backend = format!("{backend} ({backends})");
        }
        // A GPU build that found no device (ggml's Vulkan backend skips CPU-type devices such
        // as lavapipe unless one is named) runs every layer on the CPU: never a GPU figure.
        if gpu.is_empty() && backend != "CPU" {
            row.note = format!("no {backend} device: ran on the CPU");
        }
    }
    if row.runs == 0 && (row.prefill.is_some() || row.decode.is_some()) {
        row.runs = tests
            .first()
            .and_then(|t| t["n_reps"].as_u64())
            .unwrap_or(1) as usize;
        row.note = "mean (no samples_ts)".into();
    }
    row.software = is_software(&row.adapter);
    Ok(row)
}

/// Rows from `gpu-report.mjs`'s JSON document.
pub fn parse_browser(text: &str) -> Result<(String, Vec<Row>)> {
    let v: Value = serde_json::from_str(text).context("gpu-report.mjs wrote no JSON")?;
    let a = &v["adapter"];
    let s = |x: &Value| x.as_str().unwrap_or_default().to_string();
    let adapter = if let Some(e) = a["error"].as_str() {
        format!("no adapter: {e}")
    } else {
        let parts: Vec<String> = ["vendor", "architecture", "device", "description"]
            .iter()
            .map(|k| s(&a[*k]))
            .filter(|p| !p.is_empty())
            .collect();
        parts.join(" / ")
    };
    let software = a["is_fallback"].as_bool().unwrap_or(false) || is_software(&adapter);
    let mut rows = Vec::new();
    for r in v["rows"].as_array().into_iter().flatten() {
        let nums = |k: &str| -> Vec<f64> {
            r[k].as_array()
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default()
        };
        let runtime = s(&r["runtime"]);
        let mut row = Row {
            runtime: format!("{runtime} (Chromium)"),
            backend: s(&r["backend"]),
            adapter: adapter.clone(),
            software,
            model: s(&r["model"]),
            prompt_tokens: r["prompt_tokens"].as_u64(),
            gen_tokens: r["gen_tokens"].as_u64(),
            prefill: median(&nums("prefill")),
            decode: median(&nums("decode")),
            runs: nums("decode").len(),
            dispatches_per_token: r["dispatches_per_token"].as_f64(),
            encode_ms_per_token: r["encode_ms_per_token"].as_f64(),
            per_token_cost: r.get("per_token_cost").filter(|c| c.is_object()).cloned(),
            note: s(&r["error"]),
        };
        let engine_adapter = s(&r["engine_adapter"]);
        if runtime == "ours" && !engine_adapter.is_empty() {
            // The Worker's own adapter (the one the figures are from).
            row.software |= is_software(&engine_adapter);
            row.adapter = format!("{adapter} [engine: {engine_adapter}]");
        }
        if row.backend.is_empty() {
            row.backend = "WebGPU".into();
        }
        if row.backend.starts_with("wasm CPU") {
            // Ran in wasm threads, not on the adapter: its kind says nothing about this row.
            row.software = false;
            row.adapter = format!("CPU (Chromium's adapter: {adapter})");
        }
        rows.push(row);
    }
    Ok((adapter, rows))
}

fn fmt_num(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.digits$}"))
}

fn tokens(r: &Row) -> String {
    let t = |v: Option<u64>| v.map_or("-".into(), |n| n.to_string());
    format!("{}/{}", t(r.prompt_tokens), t(r.gen_tokens))
}

const HEADER: [&str; 11] = [
    "runtime",
    "backend",
    "adapter",
    "model",
    "prompt/gen tok",
    "prefill tok/s",
    "decode tok/s",
    "N",
    "dispatches/tok",
    "encode ms/tok",
    "note",
];

fn cells(r: &Row) -> [String; 11] {
    let adapter = if r.software && !r.adapter.is_empty() {
        format!("{} [SOFTWARE]", r.adapter)
    } else {
        r.adapter.clone()
    };
    [
        r.runtime.clone(),
        r.backend.clone(),
        adapter,
        r.model.clone(),
        tokens(r),
        fmt_num(r.prefill, 1),
        fmt_num(r.decode, 1),
        r.runs.to_string(),
        fmt_num(r.dispatches_per_token, 1),
        fmt_num(r.encode_ms_per_token, 3),
        r.note.clone(),
    ]
}

/// The table as Markdown (for docs/performance.md).
pub fn markdown(rows: &[Row]) -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let mut out = format!("| {} |\n", HEADER.join(" | "));
    out.push_str(&format!("|{}\n", "---|".repeat(HEADER.len())));
    for r in rows {
        let c = cells(r);
        out.push_str(&format!(
            "| {} |\n",
            c.iter().map(|s| esc(s)).collect::<Vec<_>>().join(" | ")
        ));
    }
    out
}

/// The table in aligned plain text (the terminal's).
pub fn plain(rows: &[Row]) -> String {
    let all: Vec<[String; 11]> = std::iter::once(HEADER.map(String::from))
        .chain(rows.iter().map(cells))
        .collect();
    let mut width = [0usize; 11];
    for c in &all {
        for (w, s) in width.iter_mut().zip(c) {
            *w = (*w).max(s.chars().count());
        }
    }
    let mut out = String::new();
    for c in &all {
        let line: Vec<String> = c
            .iter()
            .zip(width)
            .enumerate()
            .map(|(i, (s, w))| {
                // Figures right-aligned, words left.
                if (4..10).contains(&i) {
                    format!("{s:>w$}")
                } else {
                    format!("{s:<w$}")
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// What `tpsmeter run --json` prints today, with and without the per-token counters.
    const RUN_JSON: &str = r#"{"model":"SmolLM2","adapter":"llvmpipe (LLVM 15.0.6, 256 bits)",
        "adapter_info":{"backend":"Vulkan","device_type":"Cpu","driver":"llvmpipe","driver_info":"Mesa 22.3.6"},
        "text":"x","tokens":[1,2],"stop":"length",
        "figures":{"prompt_tokens":33,"generated_tokens":8,"ttft_s":0.5,"prefill_tps":66.0,"decode_tps":20.0,"mean_itl_s":0.05}}"#;

    fn with_cost(dispatches: f64, encode_ms: f64, decode: f64) -> String {
        RUN_JSON
            .replace(
                r#""text":"x""#,
                &format!(
                    r#""per_token_cost":{{"dispatches":{dispatches},"passes":1,"submits":1,"pipeline_changes":9,"bind_group_changes":30,"bytes_written":8,"bytes_read":4,"encode_ms":{encode_ms}}},"text":"x""#
                ),
            )
            .replace(r#""decode_tps":20.0"#, &format!(r#""decode_tps":{decode}"#))
    }

    #[test]
    fn run_json_without_counters_shows_dashes() {
        let r = parse_run_json(RUN_JSON).unwrap();
        assert_eq!(r.backend, "Vulkan");
        assert_eq!(r.driver, "llvmpipe Mesa 22.3.6");
        let row = native_row("m.gguf", &[r]);
        assert!(row.software);
        assert_eq!(row.decode, Some(20.0));
        assert_eq!(row.prompt_tokens, Some(33));
        assert_eq!(row.dispatches_per_token, None);
        let c = cells(&row);
        assert_eq!(c[8], "-");
        assert_eq!(c[9], "-");
        assert!(c[2].ends_with("[SOFTWARE]"), "{}", c[2]);
    }

    #[test]
    fn run_json_with_counters_takes_medians() {
        let runs: Vec<NativeRun> = [(200.0, 0.5, 10.0), (210.0, 0.7, 30.0), (220.0, 0.6, 20.0)]
            .iter()
            .map(|&(d, e, t)| parse_run_json(&with_cost(d, e, t)).unwrap())
            .collect();
        let row = native_row("m.gguf", &runs);
        assert_eq!(row.runs, 3);
        assert_eq!(row.decode, Some(20.0));
        assert_eq!(row.dispatches_per_token, Some(210.0));
        assert_eq!(row.encode_ms_per_token, Some(0.6));
        assert_eq!(row.note, "");
        assert!(row.per_token_cost.is_some());
    }

    #[test]
    fn run_json_must_have_figures() {
        assert!(parse_run_json(r#"{"adapter":"x"}"#).is_err());
        assert!(parse_run_json("decode 20 tok/s").is_err());
    }

    /// The shape of `llama-bench -o json` (llama.cpp of the llama-cpp-python 0.3.36 sdist).
    const LLAMA_BENCH: &str = r#"[
      {"build_commit":"abc","cpu_info":"AMD EPYC","gpu_info":"NVIDIA H100 80GB HBM3","backends":"Vulkan",
       "model_filename":"m.gguf","n_threads":2,"n_gpu_layers":99,"n_prompt":512,"n_gen":0,"n_reps":3,
       "avg_ns":1,"stddev_ns":0,"avg_ts":9000.0,"stddev_ts":10.0,
       "samples_ns":[1,2,3],"samples_ts":[9100.0,8000.0,9050.0]},
      {"build_commit":"abc","cpu_info":"AMD EPYC","gpu_info":"NVIDIA H100 80GB HBM3","backends":"Vulkan",
       "model_filename":"m.gguf","n_threads":2,"n_gpu_layers":99,"n_prompt":0,"n_gen":128,"n_reps":3,
       "avg_ns":1,"stddev_ns":0,"avg_ts":400.0,"stddev_ts":1.0,
       "samples_ns":[1,2,3],"samples_ts":[401.0,399.0,420.0]}
    ]"#;

    #[test]
    fn llama_bench_medians_of_samples() {
        let row = parse_llama_bench(LLAMA_BENCH, "llama.cpp", "Vulkan", "m.gguf").unwrap();
        assert_eq!(row.prefill, Some(9050.0));
        assert_eq!(row.decode, Some(401.0));
        assert_eq!(row.prompt_tokens, Some(512));
        assert_eq!(row.gen_tokens, Some(128));
        assert_eq!(row.runs, 3);
        assert_eq!(row.adapter, "NVIDIA H100 80GB HBM3");
        assert!(!row.software);
    }

    #[test]
    fn llama_bench_without_samples_uses_the_mean_and_says_so() {
        let old = LLAMA_BENCH
            .replace(r#""samples_ts":[9100.0,8000.0,9050.0]"#, r#""x":0"#)
            .replace(r#""samples_ts":[401.0,399.0,420.0]"#, r#""x":0"#)
            .replace("NVIDIA H100 80GB HBM3", "llvmpipe (LLVM 15.0.6, 256 bits)");
        let row = parse_llama_bench(&old, "llama.cpp", "Vulkan", "m.gguf").unwrap();
        assert_eq!(row.prefill, Some(9000.0));
        assert_eq!(row.decode, Some(400.0));
        assert_eq!(row.runs, 3);
        assert_eq!(row.note, "mean (no samples_ts)");
        assert!(row.software);
        assert!(parse_llama_bench("{}", "llama.cpp", "CPU", "m").is_err());
    }

    #[test]
    fn llama_bench_gpu_build_without_a_device_says_it_ran_on_the_cpu() {
        let none = LLAMA_BENCH.replace("NVIDIA H100 80GB HBM3", "");
        let row = parse_llama_bench(&none, "llama.cpp", "Vulkan", "m.gguf").unwrap();
        assert_eq!(row.adapter, "AMD EPYC");
        assert_eq!(row.note, "no Vulkan device: ran on the CPU");
        let cpu = none.replace("Vulkan", "CPU");
        let cpu = parse_llama_bench(&cpu, "llama.cpp", "CPU", "m.gguf").unwrap();
        assert_eq!(cpu.note, "");
        assert!(!cpu.software);
    }

    #[test]
    fn browser_rows_carry_the_adapter_and_mark_software() {
        let doc = r#"{"adapter":{"vendor":"google","architecture":"swiftshader","device":"","description":"","is_fallback":false},
          "rows":[
            {"runtime":"ours","model":"m.gguf","backend":"WebGPU","engine_adapter":"SwiftShader Device (Subzero)",
             "prefill":[50,70,60],"decode":[10,12,11],"prompt_tokens":33,"gen_tokens":8,"dispatches_per_token":454.0,"encode_ms_per_token":null},
            {"runtime":"wllama 3.8.1","model":"m.gguf","backend":"WebGPU (31/31 layers)","prefill":[5],"decode":[3],"prompt_tokens":33,"gen_tokens":8},
            {"runtime":"wllama 3.8.1","model":"g.gguf","error":"boom"},
            {"runtime":"wllama 3.8.1","model":"m.gguf","backend":"wasm CPU (WebGPU not taken: adapter lacks shader-f16)","prefill":[5],"decode":[3]}
          ]}"#;
        let (adapter, rows) = parse_browser(doc).unwrap();
        assert_eq!(adapter, "google / swiftshader");
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[0].runtime, "ours (Chromium)");
        assert_eq!(rows[0].decode, Some(11.0));
        assert_eq!(rows[0].prefill, Some(60.0));
        assert_eq!(rows[0].runs, 3);
        assert_eq!(rows[0].dispatches_per_token, Some(454.0));
        assert!(rows[..3].iter().all(|r| r.software));
        // wllama on wasm threads: not a figure of the (software) adapter.
        assert!(!rows[3].software);
        assert!(
            rows[3]
                .adapter
                .starts_with("CPU (Chromium's adapter: google")
        );
        assert!(rows[0].adapter.contains("[engine: SwiftShader"));
        assert_eq!(rows[1].backend, "WebGPU (31/31 layers)");
        assert_eq!(rows[2].note, "boom");
        assert_eq!(rows[2].decode, None);
        let (none, _) =
            parse_browser(r#"{"adapter":{"error":"requestAdapter() returned null"},"rows":[]}"#)
                .unwrap();
        assert!(none.starts_with("no adapter"));
    }

    #[test]
    fn tables_have_one_line_per_row() {
        let rows = vec![
            parse_llama_bench(LLAMA_BENCH, "llama.cpp", "Vulkan", "m.gguf").unwrap(),
            Row::failed("llama.cpp", "CUDA", "m.gguf", "not built: no nvcc | here"),
        ];
        let md = markdown(&rows);
        assert_eq!(md.lines().count(), 4);
        assert!(md.contains("| 9050.0 | 401.0 | 3 | - | - |"), "{md}");
        assert!(md.contains("no nvcc \\| here"), "{md}");
        assert_eq!(plain(&rows).lines().count(), 3);
    }

    #[test]
    fn prompt_has_the_asked_words_and_differs_per_salt() {
        let a = prompt(32, 0);
        assert_eq!(a.split(' ').count(), 32);
        assert!(a.starts_with("Alpha the sea"));
        assert_ne!(a, prompt(32, 1));
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert!(is_software("SwiftShader Device (Subzero)"));
        assert!(!is_software("NVIDIA GeForce RTX 4090"));
    }
}
