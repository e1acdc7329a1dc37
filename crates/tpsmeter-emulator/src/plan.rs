//! Turns the schedule, the fault and one request into the timed steps of its response.

use std::time::Duration;

use crate::body::Step;
use crate::config::{EmulatorConfig, Fault};
use crate::request::StreamRequest;
use crate::wire::{Durations, Finish, Wire};

/// The steps of one response, with offsets from the moment its headers go out.
pub fn plan(cfg: &EmulatorConfig, req: &StreamRequest, wire: &mut Wire) -> Vec<(Duration, Step)> {
    let s = cfg.schedule;
    let (n, finish) = match req.max_tokens {
        Some(cap) if cap < s.output_tokens => (cap, Finish::Length),
        _ => (s.output_tokens, Finish::Stop),
    };
    let k = cfg.tokens_per_chunk.max(1);
    let stall = match cfg.fault {
        Fault::StallAfter { tokens, for_ } => Some((tokens, for_)),
        _ => None,
    };
    let due = |token: u32| {
        let pause = match stall {
            Some((after, for_)) if token >= after => for_,
            _ => Duration::ZERO,
        };
        s.ttft + s.itl * token + pause
    };
    // The fault that strikes at a token position, and that position.
    let strike: Option<(u32, Step)> = match cfg.fault {
        Fault::CutAfter { tokens } => Some((tokens, Step::Cut)),
        Fault::EndWithoutMarkerAfter { tokens } => Some((tokens, Step::End)),
        Fault::ErrorEventAfter { tokens } => Some((tokens, Step::ErrorEvent)),
        Fault::MalformedJsonAfter { tokens } => Some((tokens, Step::Malformed)),
        Fault::InvalidUtf8After { tokens } => Some((tokens, Step::InvalidUtf8)),
        Fault::OversizedLine { bytes } => Some((0, Step::Oversized(bytes))),
        _ => None,
    };
    let mut strike = strike;
    let mut steps: Vec<(Duration, Step)> = wire
        .preamble()
        .into_iter()
        .map(|b| (Duration::ZERO, Step::Static(b)))
        .collect();
    let mut first = 0;
    while first < n {
        let count = k.min(n - first);
        if let Some((at, _)) = strike {
            if first >= at {
                if let Some((_, step)) = strike.take() {
                    steps.push((due(first), step));
                }
            }
        }
        steps.push((due(first), Step::Content { first, count }));
        first += count;
    }
    let last_due = due(n.saturating_sub(1));
    if let Some((_, step)) = strike.take() {
        steps.push((last_due, step));
    }
    let durations = Durations {
        total_ns: last_due.as_nanos() as u64,
        prompt_eval_ns: s.ttft.as_nanos() as u64,
        eval_ns: (s.itl * n).as_nanos() as u64,
    };
    steps.push((last_due, Step::Epilogue(finish, durations)));
    steps
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::config::Schedule;
    use tpsmeter_core::Api;

    fn req(max_tokens: Option<u32>) -> StreamRequest {
        StreamRequest {
            api: Api::OpenaiChat,
            model: "m".into(),
            max_tokens,
            include_usage: false,
            prompt_tokens: 1,
        }
    }

    fn content_dues(steps: &[(Duration, Step)]) -> Vec<(u128, u32, u32)> {
        steps
            .iter()
            .filter_map(|(d, s)| match s {
                Step::Content { first, count } => Some((d.as_millis(), *first, *count)),
                _ => None,
            })
            .collect()
    }

    fn cfg(fault: Fault, k: u32) -> EmulatorConfig {
        EmulatorConfig {
            schedule: Schedule {
                ttft: Duration::from_millis(50),
                itl: Duration::from_millis(10),
                output_tokens: 5,
            },
            fault,
            tokens_per_chunk: k,
            ..EmulatorConfig::default()
        }
    }

    #[test]
    fn tokens_are_due_on_absolute_offsets_and_grouped_by_chunk() {
        let c = cfg(Fault::None, 2);
        let r = req(None);
        let mut w = Wire::new(r.clone(), 0);
        let steps = plan(&c, &r, &mut w);
        assert_eq!(
            content_dues(&steps),
            vec![(50, 0, 2), (70, 2, 2), (90, 4, 1)]
        );
        assert!(matches!(
            steps.last().unwrap().1,
            Step::Epilogue(Finish::Stop, _)
        ));
    }

    #[test]
    fn max_tokens_caps_the_schedule_with_a_length_finish() {
        let c = cfg(Fault::None, 1);
        let r = req(Some(3));
        let mut w = Wire::new(r.clone(), 0);
        let steps = plan(&c, &r, &mut w);
        assert_eq!(content_dues(&steps).len(), 3);
        assert!(matches!(
            steps.last().unwrap().1,
            Step::Epilogue(Finish::Length, _)
        ));
    }

    #[test]
    fn a_stall_moves_the_rest_of_the_schedule_back() {
        let c = cfg(
            Fault::StallAfter {
                tokens: 2,
                for_: Duration::from_millis(1000),
            },
            1,
        );
        let r = req(None);
        let mut w = Wire::new(r.clone(), 0);
        let dues: Vec<u128> = content_dues(&plan(&c, &r, &mut w))
            .iter()
            .map(|c| c.0)
            .collect();
        assert_eq!(dues, vec![50, 60, 1070, 1080, 1090]);
    }

    #[test]
    fn a_cut_strikes_after_its_token_count() {
        let c = cfg(Fault::CutAfter { tokens: 3 }, 1);
        let r = req(None);
        let mut w = Wire::new(r.clone(), 0);
        let steps = plan(&c, &r, &mut w);
        let cut = steps
            .iter()
            .position(|(_, s)| matches!(s, Step::Cut))
            .unwrap();
        let before = steps[..cut]
            .iter()
            .filter(|(_, s)| matches!(s, Step::Content { .. }))
            .count();
        assert_eq!(before, 3);
    }
}
