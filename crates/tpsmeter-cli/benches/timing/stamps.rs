//! What the client stamped against what the emulator sent: pairing and comparing.

use super::*;

#[derive(Default)]
pub(crate) struct Samples {
    pub(crate) ttft_sched: Vec<f64>,
    pub(crate) ttft_sent: Vec<f64>,
    pub(crate) itl_sched: Vec<f64>,
    pub(crate) itl_sent: Vec<f64>,
    pub(crate) deliver: Vec<f64>,
    pub(crate) server_late: Vec<f64>,
    /// Per request: (last − first) / (n − 1) measured, minus the same from the send stamps.
    pub(crate) mean_itl_sent: Vec<f64>,
    /// Per request: the last token's delivery delay (client stamp − send stamp).
    pub(crate) last_deliver: Vec<f64>,
    pub(crate) failed: usize,
    pub(crate) unmatched: usize,
    pub(crate) requests: usize,
    /// Content events compared, and how many of their send times are the kernel's transmit
    /// stamps (the rest are the emulator's own stamps, taken before the write).
    pub(crate) events: usize,
    pub(crate) kernel_sends: usize,
}

pub(crate) fn pct(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    // Nearest-rank percentile.
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[rank - 1]
}

pub(crate) fn abs(v: &[f64]) -> Vec<f64> {
    v.iter().map(|x| x.abs()).collect()
}

/// One client request on CLOCK_MONOTONIC (ns): when it started and its stamp of each content
/// event (one read may hold several events: each gets its read's stamp).
pub(crate) struct Stamps {
    pub(crate) start_ns: f64,
    pub(crate) chunks_ns: Vec<f64>,
}

/// The CLI client's stamps of one outcome.
pub(crate) fn stamps(out: &Outcome, origin_ns: u64) -> Stamps {
    Stamps {
        start_ns: origin_ns as f64 + out.timeline.request_start_ms() * 1e6,
        chunks_ns: out
            .timeline
            .content_chunks()
            .iter()
            .flat_map(|c| std::iter::repeat_n(origin_ns as f64 + c.t_ms * 1e6, c.deltas))
            .collect(),
    }
}

/// The CLI's start stamp is when hyper pulls the request body, which it may do just after
/// writing the head: the emulator's kernel stamp of the head's arrival then precedes it by a
/// syscall and a loopback hop (6-8 µs measured at concurrency 100).
pub(crate) const CLI_START_SLACK_NS: f64 = 1_000_000.0;

/// How many neighbours (in order of start) a client request is compared with.
const MATCH_WINDOW: usize = 128;

/// Pairs client requests (sorted by start) with server records (sorted by arrival), for a
/// client that cannot name its requests (the npm package's `bench()` in a page), with the
/// client's stamp of each of `rec`'s events given by `events` (None: they cannot be paired).
///
/// Requests of a closed loop start in bursts, so order alone can pair wrongly. A pairing is
/// possible only if it is causal (arrival after the client's start, every chunk stamped by the
/// client after the server sent it), both within `slack_ns`, for a clock mapped onto
/// CLOCK_MONOTONIC only approximately (the page's `performance.now()`); among those, the
/// smallest mean delivery delay wins. Greedy over the candidates within `MATCH_WINDOW`
/// positions. It is approximate: a stream sent just after the client's own, within the
/// slack, has the smaller delay; the CLI's requests are paired exactly (`Workers`).
pub(crate) fn pair_by<'a>(
    clients: &'a [Stamps],
    recs: &[RequestRecord],
    slack_ns: f64,
    events: impl Fn(&'a Stamps, &RequestRecord) -> Option<Cow<'a, [f64]>>,
) -> Vec<(usize, usize)> {
    let mut cands: Vec<(f64, usize, usize)> = Vec::new();
    for (i, st) in clients.iter().enumerate() {
        let lo = i.saturating_sub(MATCH_WINDOW);
        let hi = (i + MATCH_WINDOW).min(recs.len());
        for (j, rec) in recs.iter().enumerate().take(hi).skip(lo) {
            let Some(client) = events(st, rec) else {
                continue;
            };
            if client.is_empty() || client.len() != rec.departed_ns.len() {
                continue;
            }
            if (rec.arrival_ns as f64) < st.start_ns - slack_ns {
                continue;
            }
            let mut sum = 0.0;
            let mut causal = true;
            for (c, &sent) in client.iter().zip(&rec.departed_ns) {
                let d = c - sent as f64;
                if d < -slack_ns {
                    causal = false;
                    break;
                }
                sum += d;
            }
            if causal {
                cands.push((sum / client.len() as f64, i, j));
            }
        }
    }
    cands.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (mut used_i, mut used_j) = (vec![false; clients.len()], vec![false; recs.len()]);
    let mut pairs = Vec::new();
    for (_, i, j) in cands {
        if !used_i[i] && !used_j[j] {
            used_i[i] = true;
            used_j[j] = true;
            pairs.push((i, j));
        }
    }
    pairs
}

/// Compares one client request's stamps with its server record.
pub(crate) fn compare_stamps(st: &Stamps, rec: &RequestRecord, s: &mut Samples) {
    let client = &st.chunks_ns;
    if client.len() != rec.departed_ns.len() || client.is_empty() {
        s.unmatched += 1;
        return;
    }
    let start = st.start_ns;
    s.events += client.len();
    s.kernel_sends += rec.departed_by_kernel;
    let ms = |ns: f64| ns / 1e6;
    let ttft = ms(client[0] - start);
    s.ttft_sched.push(ttft - TTFT_MS);
    s.ttft_sent
        .push(ttft - ms(rec.departed_ns[0] as f64 - rec.arrival_ns as f64));
    let n = client.len();
    if n > 1 {
        let sent_span = (rec.departed_ns[n - 1] - rec.departed_ns[0]) as f64;
        s.mean_itl_sent
            .push(ms(client[n - 1] - client[0] - sent_span) / (n - 1) as f64);
    }
    s.last_deliver
        .push(ms(client[n - 1] - rec.departed_ns[n - 1] as f64));
    for i in 0..client.len() {
        s.deliver.push(ms(client[i] - rec.departed_ns[i] as f64));
        s.server_late
            .push(ms(rec.departed_ns[i] as f64 - rec.due_ns[i] as f64));
        if i > 0 {
            let gap = ms(client[i] - client[i - 1]);
            s.itl_sched.push(gap - ITL_MS);
            s.itl_sent
                .push(gap - ms(rec.departed_ns[i] as f64 - rec.departed_ns[i - 1] as f64));
        }
    }
}
