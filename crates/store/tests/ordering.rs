//! Property tests of the concurrency contract (ST-2, ST-5): random update sequences from
//! several threads, some of which trigger re-entrant updates from a listener. Whatever
//! the interleaving: no update is lost, the hook and listeners see every commit exactly
//! once and in commit order, and `set` returns only after its commit was delivered.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;

use proptest::prelude::*;
use strata_store::Store;

#[derive(Clone, Debug, Default)]
struct Counter {
    /// Commits so far: equals the store's version.
    seq: u64,
    sum: u64,
    /// Set by an outside update; a listener answers it with a re-entrant update.
    request_nested: bool,
}

const NESTED_BONUS: u64 = 1_000;

#[derive(Debug, Clone)]
struct Op {
    amount: u64,
    nested: bool,
}

fn op() -> impl Strategy<Value = Op> {
    (1u64..10, prop::bool::weighted(0.3)).prop_map(|(amount, nested)| Op { amount, nested })
}

fn scenario() -> impl Strategy<Value = Vec<Vec<Op>>> {
    prop::collection::vec(prop::collection::vec(op(), 1..25), 2..5)
}

fn run(threads: Vec<Vec<Op>>) -> Result<(), TestCaseError> {
    let hook_log = Arc::new(Mutex::new(Vec::new()));
    let delivered = Arc::new(AtomicU64::new(0));
    let (h, d) = (Arc::clone(&hook_log), Arc::clone(&delivered));
    let store = Store::with_change_hook(Counter::default(), move |new: &Arc<Counter>, old| {
        assert_eq!(old.seq + 1, new.seq, "the hook saw commits out of order");
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
                c.sum += NESTED_BONUS;
                c.request_nested = false;
            });
        }
    });

    let barrier = Arc::new(Barrier::new(threads.len()));
    let handles: Vec<_> = threads
        .iter()
        .cloned()
        .map(|ops| {
            let (store, barrier, delivered) =
                (store.clone(), Arc::clone(&barrier), Arc::clone(&delivered));
            thread::spawn(move || {
                barrier.wait();
                let mut last = 0;
                for op in ops {
                    let update = store.update(|c| {
                        c.seq += 1;
                        c.sum += op.amount;
                        c.request_nested = op.nested;
                    });
                    let version = update.version().expect("every op changes the state").0;
                    assert!(version > last, "versions seen by one thread increase");
                    assert!(
                        delivered.load(Ordering::SeqCst) >= version,
                        "set returned before its commit was delivered"
                    );
                    last = version;
                }
            })
        })
        .collect();
    for h in handles {
        h.join()
            .map_err(|_| TestCaseError::fail("a writer thread panicked"))?;
    }

    let ops: Vec<&Op> = threads.iter().flatten().collect();
    let nested = ops.iter().filter(|o| o.nested).count() as u64;
    let commits = ops.len() as u64 + nested;
    let expected_sum: u64 = ops.iter().map(|o| o.amount).sum::<u64>() + nested * NESTED_BONUS;
    let state = store.get();
    prop_assert_eq!(state.sum, expected_sum, "an update was lost");
    prop_assert_eq!(state.seq, commits);
    prop_assert_eq!(store.version().0, commits);
    let in_order: Vec<u64> = (1..=commits).collect();
    prop_assert_eq!(
        &*hook_log.lock().unwrap(),
        &in_order,
        "hook: exactly once, in order"
    );
    prop_assert_eq!(
        &*listener_log.lock().unwrap(),
        &in_order,
        "listener: exactly once, in order"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn st2_st5_random_concurrent_updates_are_delivered_once_in_order_and_never_lost(
        threads in scenario()
    ) {
        run(threads)?;
    }
}
