//! The emulator the benchmark drives, on its own thread.

use super::*;

/// The emulator on its own OS thread and current-thread runtime, so that serving never
/// competes with the client's runtime for a worker (it still shares the two cores).
pub(crate) struct Server {
    pub(crate) emu: Option<Emulator>,
    pub(crate) stop: Option<tokio::sync::oneshot::Sender<()>>,
    pub(crate) thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    pub(crate) fn start(cfg: EmulatorConfig) -> Server {
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                tx.send(Emulator::start(cfg).await.unwrap()).unwrap();
                let _ = stop_rx.await;
            });
        });
        let emu = rx.recv().unwrap();
        Server {
            emu: Some(emu),
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub(crate) fn emu(&self) -> &Emulator {
        self.emu.as_ref().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.emu.take());
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
