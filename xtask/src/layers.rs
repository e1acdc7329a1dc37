//! The core's layering, checked (`cargo xtask check-map` runs it after the map's paths):
//! among `tpsmeter-core`'s top-level modules no import cycle spans more than
//! [`MAX_CYCLE`] modules, and the run spec (`spec/`, the floor) imports only modules that
//! never import it back. Issue 39 opened a 14-module knot; this keeps it open.
//!
//! Edges are the `crate::<module>` paths in a module's non-test source, doc links included
//! (a doc link that points up ties the picture as an import does). A crude reader, on
//! purpose: it reads text, so it needs no compiler, and the core writes its paths as
//! `crate::...` (`super::` stays inside a module).

use anyhow::{Result, bail};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The largest import cycle the core may hold (the parser's `decode`/`protocol`/`stream` and
/// the measurement's `metrics`/`paint`/`timeline` are three each).
pub const MAX_CYCLE: usize = 3;

/// The floor: the module everything above imports and that imports none of them.
const FLOOR: &str = "spec";

pub(crate) type Graph = BTreeMap<String, BTreeSet<String>>;

/// Fails naming each cycle over [`MAX_CYCLE`] modules and each module the floor imports that
/// imports it back (directly or through others).
pub fn check(root: &Path) -> Result<()> {
    let graph = module_graph(&root.join("crates/tpsmeter-core/src"))?;
    let mut problems = Vec::new();
    for cycle in cycles(&graph) {
        if cycle.len() > MAX_CYCLE {
            problems.push(format!(
                "an import cycle of {} modules: {}",
                cycle.len(),
                cycle.join(", ")
            ));
        }
    }
    if let Some(below) = graph.get(FLOOR) {
        for m in below {
            if reaches(&graph, m, FLOOR) {
                problems.push(format!(
                    "`{FLOOR}` imports `{m}`, which imports `{FLOOR}` back"
                ));
            }
        }
    }
    if problems.is_empty() {
        eprintln!(
            "check-map: tpsmeter-core's {} modules hold no cycle over {MAX_CYCLE}; `{FLOOR}` imports only what is below it",
            graph.len()
        );
        return Ok(());
    }
    bail!("tpsmeter-core's layering:\n  {}", problems.join("\n  "))
}

/// The module graph of the crate at `src`: each top-level module (a file or a directory)
/// with the modules its non-test source names.
pub(crate) fn module_graph(src: &Path) -> Result<Graph> {
    let mut graph = Graph::new();
    for entry in std::fs::read_dir(src)? {
        let path = entry?.path();
        let Some(name) = path.file_stem().and_then(|n| n.to_str()).map(str::to_owned) else {
            continue;
        };
        if name == "lib" || name == "main" {
            continue;
        }
        let mut text = String::new();
        collect_source(&path, &mut text)?;
        let names = crate_paths(&text);
        graph.insert(
            name.clone(),
            names.into_iter().filter(|n| *n != name).collect(),
        );
    }
    let known: BTreeSet<String> = graph.keys().cloned().collect();
    for targets in graph.values_mut() {
        targets.retain(|t| known.contains(t));
    }
    Ok(graph)
}

/// The non-test source of a file, or of every file under a directory (`tests` files and
/// directories left out; a file's `#[cfg(test)]` tail cut).
fn collect_source(path: &Path, out: &mut String) -> Result<()> {
    if path.is_dir() {
        for entry in std::fs::read_dir(path)? {
            let p = entry?.path();
            if p.file_stem().is_some_and(|n| n == "tests") {
                continue;
            }
            collect_source(&p, out)?;
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        let text = std::fs::read_to_string(path)?;
        out.push_str(text.split("#[cfg(test)]").next().unwrap_or_default());
        out.push('\n');
    }
    Ok(())
}

/// The module names after each `crate::` in `text`.
fn crate_paths(text: &str) -> BTreeSet<String> {
    text.match_indices("crate::")
        .filter(|(i, _)| {
            // `tpsmeter_core::` and `$crate::` are not this crate's own paths.
            let before = text[..*i].chars().next_back();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$')
        })
        .map(|(i, m)| {
            text[i + m.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|n| !n.is_empty())
        .collect()
}

/// Whether `to` can be reached from `from`.
fn reaches(graph: &Graph, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_owned()];
    while let Some(m) = stack.pop() {
        if m == to {
            return true;
        }
        if seen.insert(m.clone()) {
            stack.extend(graph.get(&m).into_iter().flatten().cloned());
        }
    }
    false
}

/// The strongly connected sets of more than one module (Tarjan's algorithm), each sorted.
pub(crate) fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a str) {
        let i = w.index.len();
        w.index.insert(v, i);
        w.low.insert(v, i);
        w.stack.push(v);
        w.on_stack.insert(v);
        for t in w.graph.get(v).into_iter().flatten() {
            let t = t.as_str();
            if !w.index.contains_key(t) {
                visit(w, t);
                let lt = w.low[t];
                let lv = w.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lt);
            } else if w.on_stack.contains(t) {
                let it = w.index[t];
                let lv = w.low.get_mut(v).expect("visited");
                *lv = (*lv).min(it);
            }
        }
        if w.low[v] == w.index[v] {
            let mut set = Vec::new();
            while let Some(m) = w.stack.pop() {
                w.on_stack.remove(m);
                set.push(m.to_owned());
                if m == v {
                    break;
                }
            }
            if set.len() > 1 {
                set.sort();
                w.out.push(set);
            }
        }
    }
    let mut w = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !w.index.contains_key(v.as_str()) {
            visit(&mut w, v);
        }
    }
    w.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &[&str])]) -> Graph {
        edges
            .iter()
            .map(|(a, bs)| (a.to_string(), bs.iter().map(|b| b.to_string()).collect()))
            .collect()
    }

    #[test]
    fn cycles_are_found_and_sized() {
        let g = graph(&[
            ("a", &["b"]),
            ("b", &["c"]),
            ("c", &["a", "d"]),
            ("d", &[]),
            ("e", &["e"]),
        ]);
        assert_eq!(cycles(&g), vec![vec!["a", "b", "c"]]);
        assert!(reaches(&g, "a", "d") && !reaches(&g, "d", "a"));
    }

    #[test]
    fn only_the_crate_s_own_paths_count() {
        let text =
            "use crate::report::X; // see [`crate::spec`]\nuse tpsmeter_core::load; $crate::x";
        let names: Vec<String> = crate_paths(text).into_iter().collect();
        assert_eq!(names, ["report", "spec"]);
    }
}
