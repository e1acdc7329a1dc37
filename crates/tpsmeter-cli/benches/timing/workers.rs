//! Closed-loop workers that run one level through the CLI's runner.

use super::*;

/// Waits until the emulator has dropped every stream body: a body pushes its record when
/// dropped, just after its last write, which may be after the client saw the end.
pub(crate) async fn settle(server: &Server) {
    for _ in 0..500 {
        if server.emu().stats().open_streams == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// One runner per closed-loop worker, the `k`-th naming itself `w{k}` in its requests'
/// `model`, which the emulator keeps in each record: a worker's requests run one after
/// another, so its `i`-th outcome is its `i`-th record. (Pairing by timing alone is not exact
/// at concurrency 100, where a hundred identical schedules start within a millisecond and
/// the emulator writes their chunks microseconds apart.)
pub(crate) struct Workers {
    pub(crate) client: tpsmeter_cli::bench::http::client::Client,
    pub(crate) spec: RequestSpec,
    pub(crate) origin: Instant,
    pub(crate) timeout: Duration,
    /// `kernel` or `reqwest`: where this client's read stamps come from.
    pub(crate) name: &'static str,
}

impl Workers {
    pub(crate) fn new(
        client: tpsmeter_cli::bench::http::client::Client,
        spec: RequestSpec,
        origin: Instant,
        timeout: Duration,
    ) -> anyhow::Result<Self> {
        let mut w = Workers {
            client,
            spec,
            origin,
            timeout,
            name: "",
        };
        w.name = if w.runner(0)?.stamp_source().contains("SO_TIMESTAMPNS") {
            "kernel"
        } else {
            "reqwest"
        };
        Ok(w)
    }

    fn runner(&self, k: usize) -> anyhow::Result<Arc<Runner>> {
        let spec = RequestSpec {
            model: format!("w{k}"),
            ..self.spec.clone()
        };
        let request = build_request(&spec)?;
        let r = Runner::new(
            self.client.clone(),
            spec.api,
            &request,
            self.origin,
            self.timeout,
            self.timeout,
        )?;
        Ok(r)
    }

    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    pub(crate) fn origin(&self) -> Instant {
        self.origin
    }
}

/// Runs `rounds` requests on each of `concurrency` workers (after one warm-up request each,
/// not measured, which opens the connections) and compares them with the server's records.
pub(crate) async fn level(
    server: &Server,
    workers: &Workers,
    concurrency: usize,
    rounds: usize,
) -> Samples {
    let runners: Vec<Arc<Runner>> = (0..concurrency)
        .map(|k| workers.runner(k).unwrap())
        .collect();
    let cancel = CancellationToken::new();
    let run_all = |n: usize| {
        let mut set = tokio::task::JoinSet::new();
        for (k, runner) in runners.iter().enumerate() {
            let (runner, cancel) = (runner.clone(), cancel.clone());
            set.spawn(async move {
                let mut outs = Vec::with_capacity(n);
                for _ in 0..n {
                    outs.push(runner.run(&cancel, None).await);
                }
                (k, outs)
            });
        }
        set
    };
    let mut warm = run_all(1);
    while warm.join_next().await.is_some() {}
    settle(server).await;
    let _ = server.emu().take_records();
    let mut set = run_all(rounds);
    let mut outs: Vec<Vec<Outcome>> = (0..concurrency).map(|_| Vec::new()).collect();
    while let Some(r) = set.join_next().await {
        let (k, o) = r.unwrap();
        outs[k] = o;
    }
    settle(server).await;
    let mut recs: std::collections::HashMap<String, Vec<RequestRecord>> = Default::default();
    for r in server.emu().take_records() {
        recs.entry(r.model.clone()).or_default().push(r);
    }
    let origin_ns = clock::instant_ns(workers.origin());
    let mut s = Samples::default();
    for (k, outs) in outs.iter().enumerate() {
        let mut mine = recs.remove(&format!("w{k}")).unwrap_or_default();
        mine.sort_by_key(|r| r.id);
        s.requests += outs.len();
        let ok = outs.iter().filter(|o| o.failure.is_none()).count();
        s.failed += outs.len() - ok;
        if mine.len() != outs.len() {
            // A failed request may or may not have reached the server: order no longer pairs.
            s.unmatched += ok;
            continue;
        }
        for (out, rec) in outs.iter().zip(&mine) {
            if out.failure.is_some() {
                continue;
            }
            // Equal counts could still be shifted by one (a failed request that never
            // arrived, and a stray record): the record must have arrived between the
            // request's start (less the start stamp's margin, see `CLI_START_SLACK_NS`)
            // and its first chunk.
            let st = stamps(out, origin_ns);
            let arrival = rec.arrival_ns as f64;
            if arrival < st.start_ns - CLI_START_SLACK_NS
                || st.chunks_ns.first().is_none_or(|&c| arrival > c)
            {
                s.unmatched += 1;
                continue;
            }
            compare_stamps(&st, rec, &mut s);
        }
    }
    s
}
