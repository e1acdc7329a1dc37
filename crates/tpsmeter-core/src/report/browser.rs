//! What the browser a report was measured in could measure: its engine and version, the
//! timer's step, isolation, where chunk arrivals were stamped, and which requests' Resource
//! Timing phases it did not give. Filled by the npm package (this crate does no I/O); a
//! native run has none. The same figures mean different things in different engines (a
//! 5 µs timer against a 100 µs one, phases present or unknown), so a reader comparing runs
//! needs these beside them.

use serde::{Deserialize, Serialize};

/// The browser a report was measured in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BrowserEnvironment {
    /// The rendering engine: `blink`, `gecko`, `webkit`, or `unknown`.
    pub engine: String,
    /// The browser by name: `Chromium`, `Chrome`, `Edge`, `Firefox`, `Safari`, ...
    pub browser: String,
    /// The browser's version as its user agent gives it (e.g. `153.8`).
    pub version: String,
    /// The smallest step `performance.now()` took in the page, in ms: ~0.005 cross-origin
    /// isolated in Chromium, 0.02 in Firefox and WebKit, 0.1 (or 1) otherwise.
    pub timer_resolution_ms: f64,
    /// Whether the page was cross-origin isolated (COOP + COEP).
    pub cross_origin_isolated: bool,
    /// Where each chunk's arrival was stamped.
    pub arrivals_stamped_in: StampContext,
    /// Requests whose Resource Timing gave no phases, by why (empty when all did).
    #[serde(default)]
    pub opaque: Vec<OpaqueTiming>,
}

/// Where chunk arrivals were stamped with `performance.now()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StampContext {
    /// A dedicated Worker read the streams: no page work delays a stamp.
    Worker,
    /// The page's main thread read them (`worker: false`, or no Worker could start).
    Main,
    /// The local engine's Worker made the tokens; stamped when its message reached the page.
    Engine,
}

/// Requests whose Resource Timing entry gave no phases (queue, connect, server wait), and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OpaqueTiming {
    /// `no_timing_allow_origin` (cross-origin, detailed stamps zeroed), `no_phases` (every
    /// stamp equals `startTime`: Firefox under a service worker), or `no_entry` (the browser
    /// recorded none).
    pub reason: String,
    /// How many requests.
    pub requests: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_snake_case_stamps() {
        let b = BrowserEnvironment {
            engine: "gecko".into(),
            browser: "Firefox".into(),
            version: "153.8".into(),
            timer_resolution_ms: 0.02,
            cross_origin_isolated: true,
            arrivals_stamped_in: StampContext::Worker,
            opaque: vec![OpaqueTiming {
                reason: "no_phases".into(),
                requests: 3,
            }],
        };
        let json = serde_json::to_value(&b).expect("a BrowserEnvironment serialises");
        assert_eq!(json["arrivals_stamped_in"], "worker");
        assert_eq!(json["opaque"][0]["requests"], 3);
        let back: BrowserEnvironment =
            serde_json::from_value(json).expect("its own JSON reads back");
        assert_eq!(back, b);
    }
}
