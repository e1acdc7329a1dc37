//! The browser benchmark's engines and its per-engine target: each variant's chunk-arrival
//! (ITL) error p99 against the no-library `floor` variant in the same engine, at the same
//! level (issue 51). See `browser.rs`.

use super::{Samples, abs, pct};

/// The per-engine target: the package's ITL error p99 at most its engine's floor plus this, ms.
const OVER_FLOOR_MS: f64 = 0.5;
/// The engines `timing.mjs` drives (`engine=NAME`; WebKit needs a display).
const ENGINES: [&str; 3] = ["chromium", "firefox", "webkit"];

/// The engines named in `list` (comma-separated), or Chromium alone.
pub(crate) fn engines(list: Option<&str>) -> anyhow::Result<Vec<&'static str>> {
    let Some(list) = list else {
        return Ok(vec![ENGINES[0]]);
    };
    list.split(',')
        .map(|name| {
            ENGINES
                .iter()
                .find(|e| **e == name)
                .copied()
                .ok_or_else(|| anyhow::anyhow!("unknown engine {name}: {}", ENGINES.join(", ")))
        })
        .collect()
}

/// Prints each variant's ITL error p99 over its engine's floor at the same level, against
/// [`OVER_FLOOR_MS`]. `rows`: (level, engine, variant label, samples).
pub(crate) fn over_floor<'a>(rows: impl Iterator<Item = (usize, &'a str, &'a str, &'a Samples)>) {
    let rows: Vec<_> = rows.collect();
    let p99 = |s: &Samples| pct(&mut abs(&s.itl_sent), 99.0);
    let mut printed = false;
    for &(c, engine, label, samples) in &rows {
        if label == "floor" {
            continue;
        }
        let Some(&(_, _, _, floor)) = rows
            .iter()
            .find(|(fc, fe, fl, _)| *fc == c && *fe == engine && *fl == "floor")
        else {
            continue;
        };
        if !printed {
            println!();
            println!(
                "ITL error p99 over the no-library floor in the same engine (target: <= {OVER_FLOOR_MS} ms)"
            );
            printed = true;
        }
        let (mine, base) = (p99(samples), p99(floor));
        let over = mine - base;
        let met = if over <= OVER_FLOOR_MS { "yes" } else { "NO" };
        println!(
            "{engine:>9} {label:>8} c={c}: {mine:.3} ms vs floor {base:.3} ms: {over:+.3} ms ({met})"
        );
    }
}
