//! Model checking of the dispatch protocol with shuttle (ST-2, ST-5).
//!
//! Run with `cargo nextest run -p strata-store --features shuttle --test shuttle`
//! (`scripts/test` does). The feature swaps every lock, condition variable, atomic and
//! thread-local of the engine for shuttle's, so the checker explores interleavings of
//! the real code: random schedules and PCT (which finds bugs needing a few precise
//! preemptions with high probability).

#![cfg(feature = "shuttle")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use shuttle::sync::Mutex;
use shuttle::sync::atomic::{AtomicU64, Ordering};
use shuttle::thread;
use strata_store::Store;

#[derive(Clone, Debug, Default)]
struct Counter {
    seq: u64,
    sum: u64,
    request_nested: bool,
}

/// Two or three writers; one listener answers some commits with a re-entrant update; a
/// third party subscribes and unsubscribes during deliveries.
fn scenario(writers: u64, per_writer: u64) {
    let hook_log = Arc::new(Mutex::new(Vec::new()));
    let delivered = Arc::new(AtomicU64::new(0));
    let (h, d) = (Arc::clone(&hook_log), Arc::clone(&delivered));
    let store = Store::with_change_hook(Counter::default(), move |new: &Arc<Counter>, old| {
        assert_eq!(old.seq + 1, new.seq, "hook out of order");
        h.lock().unwrap().push(new.seq);
        d.store(new.seq, Ordering::SeqCst);
    });
    let listener_log = Arc::new(Mutex::new(Vec::new()));
    let (l, s) = (Arc::clone(&listener_log), store.clone());
    let _listener = store.subscribe(move |state| {
        l.lock().unwrap().push(state.seq);
        if state.request_nested {
            s.update(|c| {
                c.seq += 1;
                c.sum += 100;
                c.request_nested = false;
            });
        }
    });

    let mut handles = Vec::new();
    for w in 0..writers {
        let (store, delivered) = (store.clone(), Arc::clone(&delivered));
        handles.push(thread::spawn(move || {
            for i in 0..per_writer {
                let update = store.update(|c| {
                    c.seq += 1;
                    c.sum += 1;
                    c.request_nested = (w + i) % 2 == 0;
                });
                let v = update.version().unwrap().0;
                assert!(
                    delivered.load(Ordering::SeqCst) >= v,
                    "set returned before delivery"
                );
            }
        }));
    }
    // A subscriber coming and going while deliveries run: must not deadlock, and the
    // listener it adds sees an unbroken run of rounds, in order, once each.
    let churn = {
        let store = store.clone();
        thread::spawn(move || {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let s2 = Arc::clone(&seen);
            let sub = store.subscribe(move |c| s2.lock().unwrap().push(c.seq));
            thread::yield_now();
            drop(sub);
            let seen = seen.lock().unwrap();
            assert!(
                seen.windows(2).all(|w| w[0] + 1 == w[1]),
                "rounds skipped: {seen:?}"
            );
        })
    };
    for h in handles {
        h.join().unwrap();
    }
    churn.join().unwrap();

    let nested = (0..writers)
        .flat_map(|w| (0..per_writer).map(move |i| (w + i) % 2 == 0))
        .filter(|n| *n)
        .count() as u64;
    let commits = writers * per_writer + nested;
    let state = store.get();
    assert_eq!(state.seq, commits);
    assert_eq!(
        state.sum,
        writers * per_writer + nested * 100,
        "an update was lost"
    );
    let in_order: Vec<u64> = (1..=commits).collect();
    assert_eq!(*hook_log.lock().unwrap(), in_order);
    assert_eq!(*listener_log.lock().unwrap(), in_order);
}

#[test]
fn st2_st5_random_schedules() {
    shuttle::check_random(|| scenario(2, 2), 10_000);
}

#[test]
fn st2_st5_pct_schedules() {
    shuttle::check_pct(|| scenario(3, 2), 10_000, 3);
}

/// Re-entrancy from the change hook while another writer waits for delivery.
#[test]
fn st5_hook_reentrancy_with_a_waiting_writer() {
    shuttle::check_pct(
        || {
            let slot: Arc<Mutex<Option<Store<u64>>>> = Arc::new(Mutex::new(None));
            let log = Arc::new(Mutex::new(Vec::new()));
            let (sl, lg) = (Arc::clone(&slot), Arc::clone(&log));
            let store = Store::with_change_hook(0u64, move |new: &Arc<u64>, old: &Arc<u64>| {
                lg.lock().unwrap().push((**old, **new));
                if **new % 10 == 1 {
                    let store = sl.lock().unwrap().clone().unwrap();
                    store.set(|n| Arc::new(**n + 1));
                }
            });
            *slot.lock().unwrap() = Some(store.clone());
            let other = {
                let store = store.clone();
                thread::spawn(move || {
                    store.set(|n| Arc::new(**n + 10));
                })
            };
            store.set(|n| Arc::new(**n + 1));
            other.join().unwrap();
            slot.lock().unwrap().take();
            let log = log.lock().unwrap();
            assert!(
                log.windows(2).all(|w| w[0].1 == w[1].0),
                "hook chain broken: {log:?}"
            );
            assert_eq!(log.first().unwrap().0, 0);
            assert_eq!(log.last().unwrap().1, *store.get());
        },
        3_000,
        3,
    );
}
