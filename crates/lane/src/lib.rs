//! The registration lane: a few OS threads at a lower scheduling priority that decode and apply
//! large REGISTER_BROKER requests. Route reads run on the async workers at normal priority, so
//! when the machine is saturated a storm of multi-MB re-registrations yields the CPU to them and
//! queues instead (brokers re-register every 30 s and wait seconds for an answer; producers wait
//! for routes). Java keeps route queries on their own executor for the same reason. When the CPU
//! is not contended the lane runs at full speed.

mod reaper;

pub use reaper::Reaper;

use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tracing::debug;

/// The lane threads' nice value (Linux; higher is lower priority): 0, the process's own. What
/// keeps route reads ahead is the lane's size (one thread fewer than the machine has cores),
/// not its priority. It was 19 (1.5 % of a normal thread's share): S7's profile at 1,000,000
/// topics (#25, docs/src/performance.md) found the one lane thread runnable for 12.7 s of a
/// 14 s churn window and running for 1.85 s, with not one registration answered in 20 s. Then
/// 2 (64 %): under S7's 1 % change churn the lane used ~37 % of a core and the rest of a
/// registration's wait was for the scheduler. At 0, three runs each way, alternated: that
/// churn's registration p99 73–146 ms against 155–217 ms, its reads 0.57–0.66x calm against
/// 0.54–0.60x, its peak RSS 511–538 MiB against 577–613 MiB (fewer bodies queued); S1 and S2 in
/// paired rounds 1.021 and 0.987, S3's reads during a 50,000-topic registration
/// (bench/results/paired-25-nice/). A registration waiting for the lane has already refreshed
/// its broker's liveness (see `handler::broker::register`), so a long wait never expires a
/// broker.
pub const LANE_NICE: i32 = 0;

/// A job runs, and gives back how to answer it: answers wait for the batch's flush.
type Job = Box<dyn FnOnce() -> Reply + Send>;
type Reply = Box<dyn FnOnce() + Send>;
/// A job's first stage (on the lane's prepare thread, if it has one) gives back its second and
/// the bytes what it prepared holds.
type Staged = Box<dyn FnOnce() -> (Job, usize) + Send>;

/// What a batched lane runs after a batch of jobs and before their answers (the route writer's
/// publication: a batch's registrations share one copy of what they change).
pub type Flush = Arc<dyn Fn() + Send + Sync>;

/// A batch ends when the queue is empty, or after this many jobs, or this long after its first
/// job started: so an answer waits for at most a few more registrations, under any flood.
const BATCH_JOBS: usize = 8;
const BATCH_TIME: Duration = Duration::from_millis(100);

/// Prepared jobs waiting for a lane thread, besides the one the prepare thread holds: what
/// they prepared (a decoded body) is held only this far ahead. A batch's worth, so that a lane
/// thread still finds a whole batch queued (at 1, S7's 1 % churn ran batches of one or two: 4×
/// the publications, registrations 0.93× and its peak RSS 1.2×).
const PREPARED_AHEAD: usize = BATCH_JOBS;

/// Nor is the next job prepared while those prepared ahead hold this many bytes (as their
/// first stages counted them): a batch of S7's 2 MB bodies fits, nine of the largest bodies a
/// broker may send do not. One job is always prepared ahead, whatever it holds.
pub const PREPARED_AHEAD_BYTES: usize = 32 << 20;

/// The bytes held by jobs prepared and not yet taken by a lane thread.
#[derive(Default)]
struct Held {
    bytes: Mutex<usize>,
    taken: Condvar,
}

impl Held {
    /// Waits until what is held is under `limit` (nothing held always is).
    fn wait_under(&self, limit: usize) {
        let Ok(mut bytes) = self.bytes.lock() else { return };
        while *bytes > 0 && *bytes >= limit {
            match self.taken.wait(bytes) {
                Ok(b) => bytes = b,
                Err(_) => return,
            }
        }
    }

    fn add(&self, n: usize) {
        if let Ok(mut bytes) = self.bytes.lock() {
            *bytes += n;
        }
    }

    fn take(&self, n: usize) {
        if let Ok(mut bytes) = self.bytes.lock() {
            *bytes = bytes.saturating_sub(n);
            self.taken.notify_all();
        }
    }
}

/// A pool of threads (one fewer than the cores, at [`LANE_NICE`]) running jobs in arrival
/// order; a pipelined lane ([`Lane::pipelined`]) has one more thread that runs the jobs' first
/// stages ([`Lane::run_prepared`]), in the same order, while the others run second stages.
pub struct Lane {
    tx: Mutex<Option<mpsc::Sender<Staged>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    count: usize,
}

/// The lane was stopped (shutdown) before the job ran.
#[derive(Debug, thiserror::Error)]
#[error("the registration lane is stopped")]
pub struct LaneStopped;

impl Lane {
    /// Starts `threads` (at least one) lane threads at `nice`; each job is answered as soon as
    /// it ran.
    pub fn new(threads: usize, nice: i32) -> Self {
        Self::start(threads, nice, None, false)
    }

    /// Like [`Lane::new`], but the jobs queued back to back run as a batch: `flush` runs after
    /// the batch's last job, and only then are the batch's jobs answered.
    pub fn batched(threads: usize, nice: i32, flush: Flush) -> Self {
        Self::start(threads, nice, Some(flush), false)
    }

    /// Like [`Lane::batched`], with one more thread (`register-prepare`) that runs the jobs'
    /// first stages ([`Lane::run_prepared`]) ahead of the others: a registration's body is
    /// decoded while the one before it is applied (#25: the fleet's cold start used 1.2 of 2
    /// cores, the lane thread decoding and applying each body in turn).
    pub fn pipelined(threads: usize, nice: i32, flush: Flush) -> Self {
        Self::start(threads, nice, Some(flush), true)
    }

    fn start(threads: usize, nice: i32, flush: Option<Flush>, pipelined: bool) -> Self {
        let (tx, rx) = mpsc::channel::<Staged>();
        let mut spawned = Vec::new();
        let rx = if pipelined {
            let (prepared_tx, prepared_rx) = mpsc::sync_channel::<Staged>(PREPARED_AHEAD);
            let held = Arc::new(Held::default());
            let prepare = move || {
                lower_priority(nice);
                // Every sender dropped (stopped): the lane threads finish what was prepared.
                while let Ok(staged) = rx.recv() {
                    held.wait_under(PREPARED_AHEAD_BYTES);
                    let (job, bytes) = staged();
                    held.add(bytes);
                    let held = Arc::clone(&held);
                    // Taken by a lane thread: what it holds no longer counts as ahead.
                    let ready: Staged = Box::new(move || {
                        held.take(bytes);
                        (job, 0)
                    });
                    if prepared_tx.send(ready).is_err() {
                        return;
                    }
                }
            };
            let thread = std::thread::Builder::new().name("register-prepare".into());
            spawned.push(thread.spawn(prepare).expect("spawn the registration prepare thread"));
            prepared_rx
        } else {
            rx
        };
        let rx = Arc::new(Mutex::new(rx));
        let count = threads.max(1);
        spawned.extend((0..count).map(|i| {
            let (rx, flush) = (Arc::clone(&rx), flush.clone());
            std::thread::Builder::new()
                .name(format!("register-lane-{i}"))
                .spawn(move || {
                    lower_priority(nice);
                    run_jobs(&rx, flush.as_deref());
                })
                .expect("spawn a registration lane thread")
        }));
        Self { tx: Mutex::new(Some(tx)), threads: Mutex::new(spawned), count }
    }

    /// How many threads the lane runs jobs on.
    pub fn threads(&self) -> usize {
        self.count
    }

    /// Runs `job` on the lane and waits for its result.
    pub async fn run<R: Send + 'static>(
        &self,
        job: impl FnOnce() -> R + Send + 'static,
    ) -> Result<R, LaneStopped> {
        self.run_prepared(|| ((), 0), move |()| job()).await
    }

    /// Runs `prepare`, then `apply` with what it gave, and waits for the result. On a
    /// pipelined lane `prepare` runs on the prepare thread, in arrival order, while the lane
    /// threads apply the jobs before it; elsewhere both run on a lane thread. `prepare` gives
    /// back, besides, the bytes what it prepared holds (see [`PREPARED_AHEAD_BYTES`]).
    pub async fn run_prepared<P: Send + 'static, R: Send + 'static>(
        &self,
        prepare: impl FnOnce() -> (P, usize) + Send + 'static,
        apply: impl FnOnce(P) -> R + Send + 'static,
    ) -> Result<R, LaneStopped> {
        let (done, result) = oneshot::channel();
        // The job runs in the caller's runtime context, so it reads the runtime's clock (the
        // liveness stamps of lane and worker agree, also under a paused test clock).
        let runtime = tokio::runtime::Handle::try_current().ok();
        let staged: Staged = Box::new(move || {
            let (prepared, bytes) = {
                let _context = runtime.as_ref().map(tokio::runtime::Handle::enter);
                prepare()
            };
            let job: Job = Box::new(move || {
                let result = {
                    let _context = runtime.as_ref().map(tokio::runtime::Handle::enter);
                    apply(prepared)
                };
                Box::new(move || {
                    let _ = done.send(result);
                })
            });
            (job, bytes)
        });
        {
            let tx = self.tx.lock().map_err(|_| LaneStopped)?;
            tx.as_ref().ok_or(LaneStopped)?.send(staged).map_err(|_| LaneStopped)?;
        }
        result.await.map_err(|_| LaneStopped)
    }

    /// Stops accepting jobs, lets the queued ones finish and joins the threads.
    pub fn stop(&self) {
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
        let threads = self.threads.lock().map(|mut t| std::mem::take(&mut *t)).unwrap_or_default();
        // A job may hold the last reference to the lane's owner: a lane thread stopping the
        // lane joins none of them (the prepare thread may wait for it to take a job); they end
        // on their own once the queues are drained.
        let me = std::thread::current().id();
        if threads.iter().all(|t| t.thread().id() != me) {
            for t in threads {
                let _ = t.join();
            }
        }
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A lane thread's loop: waits for a job when it has none to answer; with `flush`, takes the jobs
/// already queued into its batch (see [`BATCH_JOBS`]), then flushes and answers them.
fn run_jobs(rx: &Mutex<mpsc::Receiver<Staged>>, flush: Option<&(dyn Fn() + Send + Sync)>) {
    let mut replies: Vec<Reply> = Vec::new();
    let mut started = Instant::now();
    loop {
        // The lock is held only while waiting for (or looking for) the next job. A thread with
        // answers to give never waits for it: the thread that holds it is waiting for a job,
        // so none is queued (waiting would hold these answers until the next job arrives).
        let next = if replies.is_empty() {
            rx.lock().ok().and_then(|rx| rx.recv().ok())
        } else if replies.len() < BATCH_JOBS && started.elapsed() < BATCH_TIME {
            rx.try_lock().ok().and_then(|rx| rx.try_recv().ok())
        } else {
            None
        };
        match next {
            Some(job) => {
                if replies.is_empty() {
                    started = Instant::now();
                }
                replies.push(job().0());
                if flush.is_some() {
                    continue;
                }
            }
            None if replies.is_empty() => return, // every sender dropped: stopped
            None => {}
        }
        if let Some(flush) = flush {
            flush();
        }
        replies.drain(..).for_each(|reply| reply());
    }
}

/// Lowers the calling thread's priority to `nice`, never raising it (Linux: a thread's nice
/// value is its own; a process started at a higher nice value keeps it).
fn lower_priority(nice: i32) {
    #[cfg(target_os = "linux")]
    {
        let tid = rustix::thread::gettid();
        let own = rustix::process::getpriority_process(None).unwrap_or(0);
        if let Err(e) = rustix::process::setpriority_process(Some(tid), nice.max(own)) {
            debug!(error = %e, "could not lower the registration lane's priority");
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = nice;
        debug!("registration lane priority is left as is on this platform");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jobs_run_in_order_at_the_lane_priority_and_stop_joins_them() {
        let lane = Lane::new(1, LANE_NICE);
        let mut seen = Vec::new();
        for i in 0..5 {
            seen.push(lane.run(move || i * 2).await.expect("ran"));
        }
        assert_eq!(seen, [0, 2, 4, 6, 8]);
        #[cfg(target_os = "linux")]
        {
            let nice = lane
                .run(|| rustix::process::getpriority_process(Some(rustix::thread::gettid())))
                .await
                .expect("ran")
                .expect("getpriority");
            let own = rustix::process::getpriority_process(None).expect("getpriority");
            assert_eq!(nice, LANE_NICE.max(own), "lane nice {nice} vs process {own}");
        }
        lane.stop();
        assert!(matches!(lane.run(|| 1).await, Err(LaneStopped)));
    }

    /// Jobs queued back to back are answered only after the flush that follows the last of
    /// them; a job queued alone gets a flush of its own.
    #[tokio::test]
    async fn a_batch_is_answered_after_its_flush() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let flushes = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&flushes);
        let lane = Arc::new(Lane::batched(
            1,
            LANE_NICE,
            Arc::new(move || {
                counted.fetch_add(1, Ordering::SeqCst);
            }),
        ));
        // Hold the lane thread so that the next jobs queue behind it.
        let (release, held) = std::sync::mpsc::channel::<()>();
        let holder = {
            let lane = Arc::clone(&lane);
            tokio::spawn(async move { lane.run(move || held.recv().is_ok()).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let queued: Vec<_> = (0..4)
            .map(|i| {
                let (lane, flushes) = (Arc::clone(&lane), Arc::clone(&flushes));
                tokio::spawn(async move {
                    let in_job = Arc::clone(&flushes);
                    let seen = lane.run(move || in_job.load(Ordering::SeqCst)).await;
                    (i, seen.expect("ran"), flushes.load(Ordering::SeqCst))
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(50)).await;
        release.send(()).expect("release");
        assert!(holder.await.expect("joined").expect("ran"));
        for job in queued {
            let (i, ran_after, answered_after) = job.await.expect("joined");
            assert!(answered_after > ran_after, "job {i} answered before a flush that followed it");
        }
        let before = flushes.load(Ordering::SeqCst);
        assert!(
            before <= 2,
            "the queued jobs were one batch (with the held one at most): {before}"
        );
        lane.run(|| ()).await.expect("ran");
        assert_eq!(flushes.load(Ordering::SeqCst), before + 1, "a lone job has its own flush");
    }

    /// On a pipelined lane the next job's first stage runs while a lane thread applies the one
    /// before it (a plain lane would run it only after: the apply below would time out), and
    /// both stages keep the order the jobs came in.
    #[tokio::test]
    async fn a_pipelined_lane_prepares_the_next_job_while_one_is_applied() {
        let (lane, prepared_tx, first) = lane_held_in_an_apply().await;
        let second = lane.run_prepared(move || (prepared_tx.send(()).is_ok(), 0), |sent| sent);
        assert!(second.await.expect("ran"), "the second job's prepare ran");
        assert!(first.await.expect("ran"), "the second was prepared while the first applied");

        let seen = Arc::new(Mutex::new(Vec::new()));
        let jobs: Vec<_> = (0..20)
            .map(|i| {
                let (lane, seen) = (Arc::clone(&lane), Arc::clone(&seen));
                let prepared = Arc::clone(&seen);
                let job = async move {
                    let prepare = move || (prepared.lock().expect("seen").push(("prepare", i)), 0);
                    let apply = move |()| seen.lock().expect("seen").push(("apply", i));
                    lane.run_prepared(prepare, apply).await
                };
                job
            })
            .collect();
        // Queued in this order (each sent before the next is made).
        let mut running = Vec::new();
        for job in jobs {
            let mut job = Box::pin(job);
            match poll_once(job.as_mut()).await {
                Some(answered) => answered.expect("ran"),
                None => running.push(job),
            }
        }
        for job in running {
            job.await.expect("ran");
        }
        let seen = seen.lock().expect("seen").clone();
        for stage in ["prepare", "apply"] {
            let order: Vec<i32> = seen.iter().filter(|s| s.0 == stage).map(|s| s.1).collect();
            assert_eq!(order, (0..20).collect::<Vec<_>>(), "{stage} order");
        }
    }

    /// A job is not prepared while those prepared ahead hold [`PREPARED_AHEAD_BYTES`]: the
    /// third job's first stage waits until a lane thread takes the second, which holds that
    /// much; one job is prepared ahead whatever it holds.
    #[tokio::test]
    async fn what_is_prepared_ahead_is_bounded_in_bytes() {
        let (lane, release_tx, first) = lane_held_in_an_apply().await;
        let (prepared_tx, prepared_rx) = std::sync::mpsc::channel::<u32>();
        let stage = |i: u32, bytes: usize, tx: std::sync::mpsc::Sender<u32>| {
            move || (tx.send(i).expect("seen"), bytes)
        };
        let mut second = Box::pin(
            lane.run_prepared(stage(2, PREPARED_AHEAD_BYTES, prepared_tx.clone()), |()| 2),
        );
        assert!(poll_once(second.as_mut()).await.is_none());
        let mut third = Box::pin(lane.run_prepared(stage(3, 1, prepared_tx), |()| 3));
        assert!(poll_once(third.as_mut()).await.is_none());
        let wait = Duration::from_secs(5);
        assert_eq!(prepared_rx.recv_timeout(wait), Ok(2), "one ahead, however large");
        let early = prepared_rx.recv_timeout(Duration::from_millis(300));
        assert!(early.is_err(), "the third waits for the second to be taken: {early:?}");
        release_tx.send(()).expect("release");
        assert!(first.await.expect("ran"));
        assert_eq!(prepared_rx.recv_timeout(wait), Ok(3), "prepared once the second was taken");
        assert_eq!((second.await.expect("ran"), third.await.expect("ran")), (2, 3));
    }

    /// A pipelined lane of one thread whose first job waits in its apply until the sender is
    /// used (or 5 s pass: then it answers false).
    async fn lane_held_in_an_apply() -> (
        Arc<Lane>,
        std::sync::mpsc::Sender<()>,
        impl std::future::Future<Output = Result<bool, LaneStopped>>,
    ) {
        let lane = Arc::new(Lane::pipelined(1, LANE_NICE, Arc::new(|| ())));
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let held = move |()| release_rx.recv_timeout(Duration::from_secs(5)).is_ok();
        let first = {
            let lane = Arc::clone(&lane);
            async move { lane.run_prepared(|| ((), 0), held).await }
        };
        let mut first = Box::pin(first);
        assert!(poll_once(first.as_mut()).await.is_none(), "sent, and waiting in its apply");
        (lane, release_tx, first)
    }

    /// Polls `future` once (so that a lane job is sent before the next one is made).
    async fn poll_once<F: std::future::Future + Unpin>(future: F) -> Option<F::Output> {
        let mut future = future;
        std::future::poll_fn(|cx| {
            std::task::Poll::Ready(match std::pin::Pin::new(&mut future).poll(cx) {
                std::task::Poll::Ready(out) => Some(out),
                std::task::Poll::Pending => None,
            })
        })
        .await
    }

    /// A stage that stops its own lane (its owner's last reference dropped there) neither
    /// deadlocks nor loses the job: it is answered, and the lane is stopped after it.
    #[tokio::test]
    async fn a_stage_may_stop_its_own_pipelined_lane() {
        for in_prepare in [true, false] {
            let lane = Arc::new(Lane::pipelined(1, LANE_NICE, Arc::new(|| ())));
            let (a, b) = (Arc::clone(&lane), Arc::clone(&lane));
            let job = lane.run_prepared(
                move || (in_prepare.then(|| a.stop()), 0),
                move |_| (!in_prepare).then(|| b.stop()).map_or(1, |()| 2),
            );
            let answered = tokio::time::timeout(Duration::from_secs(5), job).await;
            let expected = if in_prepare { 1 } else { 2 };
            assert_eq!(answered.expect("no deadlock").expect("ran"), expected);
            assert!(matches!(lane.run(|| 1).await, Err(LaneStopped)));
        }
    }

    /// With several threads, one waits for the next job while another finishes a batch: the
    /// batch is flushed and answered at once, not when a later job wakes the waiting thread.
    #[tokio::test]
    async fn a_batch_is_answered_while_another_thread_waits_for_a_job() {
        let lane = Lane::batched(3, LANE_NICE, Arc::new(|| ()));
        for i in 0..20 {
            let job = lane.run(move || {
                // Long enough for the idle threads to be waiting for the queue meanwhile.
                std::thread::sleep(Duration::from_millis(20));
                i
            });
            let answered = tokio::time::timeout(Duration::from_secs(5), job).await;
            assert_eq!(answered.expect("answered within 5 s").expect("ran"), i);
        }
        lane.stop();
    }
}
