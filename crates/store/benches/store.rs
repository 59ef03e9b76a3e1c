//! Day-to-day micro-benchmarks of the store engine (divan). The workloads with targets are
//! in `strata-bench store`; these are for quick comparisons while changing the engine:
//! `cargo bench -p strata-store`.

#![allow(missing_docs)]

use std::sync::Arc;

use strata_store::Store;

fn main() {
    divan::main();
}

#[derive(Clone)]
struct State {
    fields: [u64; 80],
    verbose: bool,
}

fn state() -> State {
    State {
        fields: [0; 80],
        verbose: false,
    }
}

#[divan::bench]
fn set_one_field(bencher: divan::Bencher<'_, '_>) {
    let store = Store::new(state());
    let mut i = 0usize;
    bencher.bench_local(|| {
        i = (i + 1) % 80;
        store.update(|s| s.fields[i] += 1)
    });
}

#[divan::bench]
fn set_unchanged(bencher: divan::Bencher<'_, '_>) {
    let store = Store::new(state());
    bencher.bench_local(|| store.set(Arc::clone));
}

#[divan::bench]
fn get(bencher: divan::Bencher<'_, '_>) {
    let store = Store::new(state());
    bencher.bench_local(|| store.get());
}

#[divan::bench(args = [0, 1, 10])]
fn set_with_listeners(bencher: divan::Bencher<'_, '_>, listeners: usize) {
    let store = Store::new(state());
    let _subs: Vec<_> = (0..listeners)
        .map(|_| {
            store.subscribe(|s| {
                divan::black_box(s);
            })
        })
        .collect();
    bencher.bench_local(|| store.update(|s| s.verbose = !s.verbose));
}
