//! 10,000 concurrent `Registry::invoke` calls of a tool that sleeps 10 ms,
//! on a multi-thread runtime with 2 workers.
//!
//! `cargo bench --bench concurrency` prints criterion's group (the time
//! for all 10,000 to finish), then a summary: the total time (target: at
//! most 1.5 s) and the memory each pending call holds, read two ways while
//! the most calls are waiting at once (the first may be done before the
//! last start): the bytes live on the heap (a counting global allocator in
//! this binary) and the process's resident set (`/proc/self/statm`), each
//! minus the same reading before, divided by the calls waiting then.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use tokio::runtime::Runtime;
use tool_runtime::prelude::*;

/// Counts the bytes live on the heap.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const CALLS: usize = 10_000;

#[derive(Default)]
struct App {
    /// Calls inside the tool now.
    waiting: AtomicUsize,
    /// Calls that entered the tool so far.
    entered: AtomicUsize,
}

/// Wait a little, then answer.
#[tool(read_only)]
async fn nap(ctx: Ctx<App>, order_id: String) -> String {
    ctx.app().entered.fetch_add(1, Ordering::SeqCst);
    ctx.app().waiting.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(10)).await;
    ctx.app().waiting.fetch_sub(1, Ordering::SeqCst);
    order_id
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build().unwrap()
}

fn registry() -> Registry<App> {
    Registry::<App>::builder().tools(tools![nap]).build().unwrap()
}

/// Resident set size, in bytes.
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm.split_whitespace().nth(1).and_then(|field| field.parse().ok()).unwrap_or(0);
    pages * 4096
}

struct Measured {
    total: Duration,
    /// The most calls waiting in the tool at once, when memory was read.
    waiting: usize,
    live_per_call: f64,
    rss_per_call: f64,
    rss_after: usize,
    rss_before: usize,
}

/// Starts all calls, samples memory once all wait, and waits for them.
fn measure(rt: &Runtime, registry: &Registry<App>) -> Measured {
    let app = Arc::new(App::default());
    let (live_before, rss_before) = (LIVE.load(Ordering::SeqCst), rss());
    let started = Instant::now();
    let ((waiting, live_pending, rss_pending), results) = rt.block_on(async {
        let handles: Vec<_> = (0..CALLS)
            .map(|i| {
                let (registry, app) = (registry.clone(), app.clone());
                tokio::spawn(async move {
                    let args = format!("{{\"order_id\": \"A-{i}\"}}");
                    registry.invoke(&app, "nap", args).await
                })
            })
            .collect();
        // Sample at the most calls waiting at once (the first calls may
        // be done before the last are started), until all have entered.
        let mut pending = (0, 0, 0);
        while app.entered.load(Ordering::SeqCst) < CALLS && started.elapsed() < Duration::from_secs(5) {
            let waiting = app.waiting.load(Ordering::SeqCst);
            if waiting > pending.0 {
                pending = (waiting, LIVE.load(Ordering::SeqCst), rss());
            }
            tokio::task::yield_now().await;
        }
        let mut results = Vec::with_capacity(CALLS);
        for handle in handles {
            results.push(handle.await.unwrap());
        }
        (pending, results)
    });
    let total = started.elapsed();
    assert!(results.iter().all(|result| result.kind == tool_runtime::ResultKind::Success), "every call succeeds");
    drop(results);
    Measured {
        total,
        waiting,
        live_per_call: (live_pending as f64 - live_before as f64) / waiting.max(1) as f64,
        rss_per_call: (rss_pending as f64 - rss_before as f64) / waiting.max(1) as f64,
        rss_after: rss(),
        rss_before,
    }
}

fn benches(c: &mut Criterion) {
    let rt = runtime();
    let registry = registry();
    let mut group = c.benchmark_group("concurrency");
    group.sample_size(10);
    group.bench_function("10000_calls_sleeping_10ms", |b| b.iter_custom(|iters| (0..iters).map(|_| measure(&rt, &registry).total).sum()));
    group.finish();
}

fn summary() {
    let rt = runtime();
    let registry = registry();
    // The first run grows the runtime's and the allocator's pools.
    let warm = measure(&rt, &registry);
    let runs: Vec<Measured> = (0..5).map(|_| measure(&rt, &registry)).collect();
    let mut totals: Vec<Duration> = runs.iter().map(|run| run.total).collect();
    totals.sort();
    let median = totals[totals.len() / 2];
    let last = runs.last().unwrap();
    println!("\nconcurrency: {CALLS} concurrent invoke calls of a tool that sleeps 10 ms (multi-thread runtime, 2 workers)");
    println!(
        "total: median {median:.2?} of 5 runs (min {:.2?}, max {:.2?}); target <= 1.5 s: {}",
        totals[0],
        totals[totals.len() - 1],
        if median <= Duration::from_millis(1500) { "met" } else { "NOT met" }
    );
    println!(
        "memory per pending call: {:.0} bytes live on the heap, {:.0} bytes of RSS, read with {} calls waiting at once (first run: {:.0} heap, {:.0} RSS, {} waiting)",
        last.live_per_call, last.rss_per_call, last.waiting, warm.live_per_call, warm.rss_per_call, warm.waiting
    );
    println!("(RSS per call means most on the first run: later runs reuse pages the allocator kept, so their RSS barely moves)");
    println!("RSS before the last run {:.1} MiB, after it {:.1} MiB", last.rss_before as f64 / 1048576.0, last.rss_after as f64 / 1048576.0);
}

criterion_group!(group, benches);

fn main() {
    group();
    Criterion::default().configure_from_args().final_summary();
    summary();
}
