//! The provider payload (OpenAI Chat Completions) for the tools offered in
//! a step, for registries of 10, 100 and 1,000 tools, each with a
//! visibility predicate.
//!
//! - `prepared`: `run.offered()` (every predicate decided) and
//!   `Prepared::payload` joining the entries serialised once into a fresh
//!   `String`;
//! - `reused`: the same into a buffer reused across steps
//!   (`Prepared::payload_into`), as a host loop would;
//! - `export`: the same step exporting and serialising every schema inside
//!   it (`openai::chat::tools` + `serde_json::to_string`), for comparison;
//! - `memcpy`: copying the payload's bytes into a buffer that is already
//!   allocated, the floor.
//!
//! `cargo bench --bench offer` prints criterion's groups, then the ratios
//! (targets: cost linear in the tools offered; a step over 1,000 tools under
//! 10x the copy of its bytes), measured side by side in alternating batches.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group};
use serde_json::{Value, json};
use tool_runtime::providers::{Dialect, ExportOptions, Prepared, openai};
use tool_runtime::{DynamicTool, Registry, Run, ToolError};

const SIZES: [usize; 3] = [10, 100, 1000];

/// A registry of `n` dynamic tools, each with three documented parameters
/// and a visibility predicate (which passes on the steps measured).
fn registry(n: usize) -> Registry<()> {
    let mut builder = Registry::<()>::builder();
    for i in 0..n {
        let schema = json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": format!("What to look for in catalogue {i}."), "maxLength": 200},
                "limit": {"type": "integer", "description": "At most this many results.", "minimum": 1, "maximum": 100},
                "include_archived": {"type": "boolean", "description": "Also search archived entries.", "default": false}
            },
            "required": ["query"],
            "additionalProperties": false
        });
        let tool = DynamicTool::new(
            format!("search_catalogue_{i:04}"),
            format!("Search catalogue number {i} for entries matching a query; returns their ids and titles."),
            schema,
            |_: Value, _| async { Ok::<_, ToolError>(Value::Null) },
        )
        .visible_when(move |view| view.executed.len() < 1_000 && (view.step < 1_000 || i % 2 == 0));
        builder = builder.tool(tool);
    }
    builder.build().unwrap()
}

struct Setup {
    run: Run<()>,
    prepared: Prepared,
    payload: String,
}

fn setup(n: usize) -> Setup {
    let registry = registry(n);
    let prepared = Prepared::new(Dialect::OpenAiChat, registry.definitions(), &ExportOptions::default()).unwrap();
    let run = registry.run(Arc::new(()));
    let payload = prepared.payload(run.offered());
    assert_eq!(run.offered().len(), n);
    let exported = serde_json::to_string(&openai::chat::tools(run.offered(), &ExportOptions::default()).unwrap().tools).unwrap();
    assert_eq!(payload, exported, "the prepared payload is the dialect's export");
    Setup { run, prepared, payload }
}

fn step_prepared(setup: &Setup) -> String {
    setup.prepared.payload(setup.run.offered())
}

fn step_reused(setup: &Setup, buffer: &mut String) -> usize {
    setup.prepared.payload_into(setup.run.offered(), buffer);
    buffer.len()
}

fn step_export(setup: &Setup) -> String {
    serde_json::to_string(&openai::chat::tools(setup.run.offered(), &ExportOptions::default()).unwrap().tools).unwrap()
}

fn copy(payload: &str, buffer: &mut Vec<u8>) -> usize {
    buffer.clear();
    buffer.extend_from_slice(payload.as_bytes());
    buffer.len()
}

fn benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("offer");
    for n in SIZES {
        let setup = setup(n);
        let mut buffer = Vec::with_capacity(setup.payload.len());
        group.bench_with_input(BenchmarkId::new("prepared", n), &setup, |b, setup| b.iter(|| step_prepared(black_box(setup))));
        let mut reused = String::new();
        group.bench_with_input(BenchmarkId::new("reused", n), &setup, |b, setup| b.iter(|| step_reused(black_box(setup), &mut reused)));
        group.bench_with_input(BenchmarkId::new("export", n), &setup, |b, setup| b.iter(|| step_export(black_box(setup))));
        group.bench_with_input(BenchmarkId::new("memcpy", n), &setup, |b, setup| b.iter(|| copy(black_box(&setup.payload), &mut buffer)));
    }
    group.finish();
}

/// The median time of one run of `f`, over alternating batches.
fn median(batches: &mut [Duration]) -> Duration {
    batches.sort();
    batches[batches.len() / 2]
}

fn summary() {
    println!("\noffer: OpenAI chat payload of one step (median of 31 alternating batches)");
    println!(
        "{:>6} {:>10} {:>12} {:>12} {:>12} {:>12} {:>14} {:>10} {:>10}",
        "tools", "bytes", "prepared", "reused", "export", "memcpy", "reused/tool", "prep/copy", "reuse/copy"
    );
    let (mut per_tool, mut reused_per_tool) = (Vec::new(), Vec::new());
    for n in SIZES {
        let setup = setup(n);
        let mut buffer = Vec::with_capacity(setup.payload.len());
        let iters = (200_000 / n) as u32;
        let (mut a, mut b, mut m, mut r) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut reused = String::new();
        for _ in 0..31 {
            let started = Instant::now();
            for _ in 0..iters {
                black_box(step_prepared(black_box(&setup)));
            }
            a.push(started.elapsed() / iters);
            let started = Instant::now();
            for _ in 0..iters {
                black_box(step_reused(black_box(&setup), &mut reused));
            }
            r.push(started.elapsed() / iters);
            let started = Instant::now();
            for _ in 0..(iters / 10).max(1) {
                black_box(step_export(black_box(&setup)));
            }
            b.push(started.elapsed() / (iters / 10).max(1));
            let started = Instant::now();
            for _ in 0..iters {
                black_box(copy(black_box(&setup.payload), &mut buffer));
            }
            m.push(started.elapsed() / iters);
        }
        let (prepared, export, memcpy, reused) = (median(&mut a), median(&mut b), median(&mut m), median(&mut r));
        let ratio = prepared.as_secs_f64() / memcpy.as_secs_f64();
        let reused_ratio = reused.as_secs_f64() / memcpy.as_secs_f64();
        per_tool.push(prepared.as_secs_f64() / n as f64);
        reused_per_tool.push(reused.as_secs_f64() / n as f64);
        println!(
            "{n:>6} {:>10} {prepared:>12.2?} {reused:>12.2?} {export:>12.2?} {memcpy:>12.2?} {:>12.1}ns {ratio:>9.1}x {reused_ratio:>9.1}x",
            setup.payload.len(),
            reused.as_secs_f64() / n as f64 * 1e9
        );
    }
    let spread = |costs: &[f64]| costs.iter().cloned().fold(f64::MIN, f64::max) / costs.iter().cloned().fold(f64::MAX, f64::min);
    println!(
        "linear: the cost per offered tool varies {:.2}x (fresh String) and {:.2}x (reused buffer) from 10 to 1,000 tools (1.00 is perfectly linear)",
        spread(&per_tool),
        spread(&reused_per_tool)
    );
    println!("target: a step over 1,000 tools under 10x the copy of its bytes (prep/copy, reuse/copy at 1000)");
}

criterion_group!(group, benches);

fn main() {
    group();
    Criterion::default().configure_from_args().final_summary();
    summary();
}
