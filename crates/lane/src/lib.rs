//! The registration lane: a few OS threads at a lower scheduling priority that decode and apply
//! large REGISTER_BROKER requests. Route reads run on the async workers at normal priority, so
//! when the machine is saturated a storm of multi-MB re-registrations yields the CPU to them and
//! queues instead (brokers re-register every 30 s and wait seconds for an answer; producers wait
//! for routes). Java keeps route queries on their own executor for the same reason. When the CPU
//! is not contended the lane runs at full speed.

mod reaper;

pub use reaper::Reaper;

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
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

/// The route-snapshot writer's nice value: the lowest, 19 (a snapshot may wait; see
/// `snapshot.rs`).
pub const SNAPSHOT_NICE: i32 = 19;

/// A job runs, and gives back how to answer it: answers wait for the batch's flush.
type Job = Box<dyn FnOnce() -> Reply + Send>;
type Reply = Box<dyn FnOnce() + Send>;

/// What a batched lane runs after a batch of jobs and before their answers (the route writer's
/// publication: a batch's registrations share one copy of what they change).
pub type Flush = Arc<dyn Fn() + Send + Sync>;

/// A batch ends when the queue is empty, or after this many jobs, or this long after its first
/// job started: so an answer waits for at most a few more registrations, under any flood.
const BATCH_JOBS: usize = 8;
const BATCH_TIME: Duration = Duration::from_millis(100);

/// A pool of threads (one fewer than the cores, at [`LANE_NICE`]) running jobs in arrival
/// order.
pub struct Lane {
    tx: Mutex<Option<mpsc::Sender<Job>>>,
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
        Self::start(threads, nice, None)
    }

    /// Like [`Lane::new`], but the jobs queued back to back run as a batch: `flush` runs after
    /// the batch's last job, and only then are the batch's jobs answered.
    pub fn batched(threads: usize, nice: i32, flush: Flush) -> Self {
        Self::start(threads, nice, Some(flush))
    }

    fn start(threads: usize, nice: i32, flush: Option<Flush>) -> Self {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let count = threads.max(1);
        let threads = (0..count)
            .map(|i| {
                let (rx, flush) = (Arc::clone(&rx), flush.clone());
                std::thread::Builder::new()
                    .name(format!("register-lane-{i}"))
                    .spawn(move || {
                        lower_priority(nice);
                        run_jobs(&rx, flush.as_deref());
                    })
                    .expect("spawn a registration lane thread")
            })
            .collect();
        Self { tx: Mutex::new(Some(tx)), threads: Mutex::new(threads), count }
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
        let (done, result) = oneshot::channel();
        // The job runs in the caller's runtime context, so it reads the runtime's clock (the
        // liveness stamps of lane and worker agree, also under a paused test clock).
        let runtime = tokio::runtime::Handle::try_current().ok();
        let job: Job = Box::new(move || {
            let result = {
                let _context = runtime.as_ref().map(tokio::runtime::Handle::enter);
                job()
            };
            Box::new(move || {
                let _ = done.send(result);
            })
        });
        {
            let tx = self.tx.lock().map_err(|_| LaneStopped)?;
            tx.as_ref().ok_or(LaneStopped)?.send(job).map_err(|_| LaneStopped)?;
        }
        result.await.map_err(|_| LaneStopped)
    }

    /// Stops accepting jobs, lets the queued ones finish and joins the threads.
    pub fn stop(&self) {
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
        let threads = self.threads.lock().map(|mut t| std::mem::take(&mut *t)).unwrap_or_default();
        let me = std::thread::current().id();
        for t in threads {
            // A job may hold the last reference to the lane's owner: never join oneself.
            if t.thread().id() != me {
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
fn run_jobs(rx: &Mutex<mpsc::Receiver<Job>>, flush: Option<&(dyn Fn() + Send + Sync)>) {
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
                replies.push(job());
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
pub fn lower_priority(nice: i32) {
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
