//! Cost of the measurement path's pieces: pushing one sample into the ring
//! (real-time side) and recording one sample (aggregator side).
//!
//! `cargo bench -p rtscope-core --bench record`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rtscope_core::record::SeriesRecorder;
use rtscope_core::sample::{ring, Sample, SampleSink};

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("sample");
    g.throughput(Throughput::Elements(1));

    // Real-time side: one push into the SPSC ring (drained every 4096 pushes).
    let (mut tx, mut rx) = ring(8192);
    let mut i = 0u64;
    g.bench_function("ring_push", |b| {
        b.iter(|| {
            i += 1;
            tx.push(Sample {
                seq: i,
                t_ns: i * 1000,
                latency_ns: (i % 5000) as i64,
                overruns: 0,
                cpu: 0,
            });
            if i % 4096 == 0 {
                rx.drain(|_| {});
            }
        })
    });

    // Aggregator side: histogram + stats + timeline + spikes for one sample.
    let mut rec = SeriesRecorder::new(0, 32, None);
    let mut j = 0u64;
    g.bench_function("record", |b| {
        b.iter(|| {
            j += 1;
            rec.record(&Sample {
                seq: j,
                t_ns: j * 100_000,
                latency_ns: ((j * 7919) % 200_000) as i64,
                overruns: 0,
                cpu: 0,
            })
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
