//! One test per rule of the store's contract (ST-1 … ST-5, UI-2, UI-3, and the crate
//! docs' concurrency rules 1–7).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

use strata_store::{MAX_REENTRANT_DEPTH, Store, Update, Version};

/// Runs `f` on a thread and fails the test if it has not finished in 20 s: a deadlock
/// must fail, not hang the suite.
fn within_deadline<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("deadlock: the store did not return")
}

#[derive(Clone, Debug, PartialEq)]
struct S {
    n: u64,
    verbose: bool,
    tag: &'static str,
}

fn s0() -> S {
    S {
        n: 0,
        verbose: false,
        tag: "",
    }
}

type Log = Arc<Mutex<Vec<String>>>;

fn log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

/// The text of a panic payload (`panic!` with or without format arguments).
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_string()))
        .unwrap_or_default()
}

fn push(log: &Log, entry: String) {
    log.lock().unwrap().push(entry);
}

fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

#[test]
fn st1_updates_are_functions_of_the_previous_state() {
    let store = Store::new(s0());
    store.set(|prev| {
        Arc::new(S {
            n: prev.n + 1,
            ..S::clone(prev)
        })
    });
    store.update(|s| s.n *= 10);
    assert_eq!(store.get().n, 10);
    assert_eq!(store.version(), Version(2));
}

#[test]
fn st2_no_update_is_lost_with_many_writer_threads() {
    let store = Store::new(s0());
    let threads = 8;
    let per_thread = 2_000;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (store, barrier) = (store.clone(), Arc::clone(&barrier));
            thread::spawn(move || {
                barrier.wait();
                for _ in 0..per_thread {
                    store.update(|s| s.n += 1);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(store.get().n, (threads * per_thread) as u64);
    assert_eq!(store.version(), Version((threads * per_thread) as u64));
}

#[test]
fn st2_the_updater_runs_once_with_the_latest_state() {
    let store = Store::new(s0());
    store.update(|s| s.n = 5);
    let runs = AtomicUsize::new(0);
    store.set(|prev| {
        runs.fetch_add(1, Ordering::SeqCst);
        assert_eq!(prev.n, 5);
        Arc::new(S {
            n: 6,
            ..S::clone(prev)
        })
    });
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn st3_returning_the_previous_state_commits_and_notifies_nothing() {
    let hooks = Arc::new(AtomicUsize::new(0));
    let h = Arc::clone(&hooks);
    let store = Store::with_change_hook(s0(), move |_: &Arc<S>, _: &Arc<S>| {
        h.fetch_add(1, Ordering::SeqCst);
    });
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    let _sub = store.subscribe(move |_| {
        c.fetch_add(1, Ordering::SeqCst);
    });
    let before = store.get();
    assert_eq!(store.set(Arc::clone), Update::Unchanged);
    assert_eq!(store.update(|s| assert_eq!(s.n, 0)), Update::Unchanged);
    assert!(Arc::ptr_eq(&before, &store.get()));
    assert_eq!(store.version(), Version(0));
    assert_eq!(hooks.load(Ordering::SeqCst), 0);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[test]
fn st3_an_equal_but_new_value_is_a_change() {
    // "No change" is pointer identity, never a deep comparison: an updater that builds
    // an equal copy has made a change (and paid for it).
    let store = Store::new(s0());
    assert!(store.set(|prev| Arc::new(S::clone(prev))).is_committed());
}

/// ST-4: the change hook gets (new, old), after commit, before listeners.
#[test]
fn st4_the_hook_sees_new_and_old_after_commit_and_before_listeners() {
    let order = log();
    let store_slot: Arc<Mutex<Option<Store<S>>>> = Arc::new(Mutex::new(None));
    let (o, slot) = (Arc::clone(&order), Arc::clone(&store_slot));
    let store = Store::with_change_hook(s0(), move |new: &Arc<S>, old: &Arc<S>| {
        let committed = slot.lock().unwrap().as_ref().unwrap().get();
        assert!(
            Arc::ptr_eq(&committed, new),
            "the hook runs after the commit"
        );
        push(&o, format!("hook {}->{}", old.n, new.n));
    });
    *store_slot.lock().unwrap() = Some(store.clone());
    let o = Arc::clone(&order);
    let _a = store.subscribe(move |s| push(&o, format!("listener a {}", s.n)));
    let o = Arc::clone(&order);
    let _b = store.subscribe(move |s| push(&o, format!("listener b {}", s.n)));
    store.update(|s| s.n = 1);
    assert_eq!(
        entries(&order),
        ["hook 0->1", "listener a 1", "listener b 1"]
    );
    store_slot.lock().unwrap().take();
}

#[test]
fn st5_an_update_inside_a_listener_is_delivered_after_the_current_round() {
    let order = log();
    let store = Store::new(s0());
    let (o, s) = (Arc::clone(&order), store.clone());
    let _first = store.subscribe(move |state| {
        push(&o, format!("first sees {}", state.n));
        if state.n == 1 {
            let update = s.update(|d| d.n = 2);
            // Committed at once (a read sees it) but not yet delivered.
            assert!(update.is_committed());
            assert_eq!(s.get().n, 2);
            push(&o, "first re-entered".into());
        }
    });
    let o = Arc::clone(&order);
    let _second = store.subscribe(move |state| push(&o, format!("second sees {}", state.n)));
    within_deadline(move || store.update(|d| d.n = 1));
    assert_eq!(
        entries(&order),
        [
            "first sees 1",
            "first re-entered",
            "second sees 1",
            "first sees 2",
            "second sees 2"
        ]
    );
}

#[test]
fn st5_an_update_inside_the_hook_is_queued_in_commit_order() {
    let order = log();
    let slot: Arc<Mutex<Option<Store<S>>>> = Arc::new(Mutex::new(None));
    let (o, sl) = (Arc::clone(&order), Arc::clone(&slot));
    let store = Store::with_change_hook(s0(), move |new: &Arc<S>, old: &Arc<S>| {
        push(&o, format!("hook {}->{}", old.n, new.n));
        if new.n < 3 {
            let store = sl.lock().unwrap().clone().unwrap();
            store.update(|d| d.n += 1);
        }
    });
    *slot.lock().unwrap() = Some(store.clone());
    let o = Arc::clone(&order);
    let _l = store.subscribe(move |s| push(&o, format!("listener {}", s.n)));
    within_deadline(move || store.update(|d| d.n = 1));
    assert_eq!(
        entries(&order),
        [
            "hook 0->1",
            "listener 1",
            "hook 1->2",
            "listener 2",
            "hook 2->3",
            "listener 3"
        ]
    );
    slot.lock().unwrap().take();
}

#[test]
fn rule3_callbacks_may_use_every_store_operation_without_deadlock() {
    let store = Store::new(s0());
    let s = store.clone();
    let extra = Arc::new(Mutex::new(Vec::new()));
    let e = Arc::clone(&extra);
    let _l = store.subscribe(move |state| {
        // Read, select, subscribe, unsubscribe and update from inside a listener.
        let _ = s.get();
        let _ = s.version();
        let mut sel = s.select(|st| st.verbose);
        let _ = sel.changed(&s);
        let sub = s.subscribe(|_| {});
        drop(sub);
        e.lock().unwrap().push(s.subscribe(|_| {}));
        if state.n == 1 && !state.verbose {
            s.update(|d| d.verbose = true);
        }
    });
    within_deadline(move || {
        store.update(|d| d.n = 1);
        assert!(store.get().verbose);
    });
}

#[test]
fn rule5_set_returns_only_after_its_commit_is_delivered_by_another_dispatcher() {
    // Thread A's listener is slow; thread B commits while A is delivering. B's `set`
    // must not return before the hook and listeners have run for B's commit.
    let delivered = Arc::new(AtomicU64::new(0));
    let d = Arc::clone(&delivered);
    let store = Store::with_change_hook(s0(), move |new: &Arc<S>, _: &Arc<S>| {
        d.fetch_max(new.n, Ordering::SeqCst);
    });
    let entered = Arc::new(Barrier::new(2));
    let (en, release) = (Arc::clone(&entered), Arc::new(AtomicBool::new(false)));
    let rel = Arc::clone(&release);
    let _slow = store.subscribe(move |s| {
        if s.tag == "slow" {
            en.wait();
            while !rel.load(Ordering::SeqCst) {
                thread::yield_now();
            }
        }
    });
    let a = {
        let store = store.clone();
        thread::spawn(move || store.update(|d| d.tag = "slow"))
    };
    entered.wait(); // A is now inside its listener, as dispatcher.
    let b = {
        let (store, delivered) = (store.clone(), Arc::clone(&delivered));
        thread::spawn(move || {
            let update = store.update(|d| {
                d.n = 7;
                d.tag = "";
            });
            (update, delivered.load(Ordering::SeqCst))
        })
    };
    thread::sleep(Duration::from_millis(50));
    assert!(
        !b.is_finished(),
        "B returned before its commit was delivered"
    );
    release.store(true, Ordering::SeqCst);
    a.join().unwrap();
    let (update, seen_by_hook) = b.join().unwrap();
    assert_eq!(update, Update::Committed(Version(2)));
    assert_eq!(seen_by_hook, 7, "B's hook ran before B's set returned");
}

#[test]
fn rule1_set_inside_an_updater_panics_with_a_clear_message() {
    let store = Store::new(s0());
    let inner = store.clone();
    let err = catch_unwind(AssertUnwindSafe(|| {
        store.set(|prev| {
            inner.update(|d| d.n += 1);
            Arc::clone(prev)
        })
    }))
    .unwrap_err();
    let msg = panic_text(&*err);
    assert!(
        msg.contains("from inside an updater of the same store"),
        "{msg}"
    );
    // The store is still usable.
    store.update(|d| d.n = 3);
    assert_eq!(store.get().n, 3);
}

#[test]
fn rule4_an_endless_feedback_loop_is_a_clear_error_not_a_hang() {
    let store = Store::new(s0());
    let s = store.clone();
    let _loop = store.subscribe(move |_| {
        s.update(|d| d.n += 1);
    });
    let err = within_deadline(move || {
        let result = catch_unwind(AssertUnwindSafe(|| store.update(|d| d.n = 1)));
        (panic_text(&*result.unwrap_err()), store.get().n)
    });
    assert!(err.0.contains("feedback loop"), "{}", err.0);
    assert_eq!(err.1, u64::from(MAX_REENTRANT_DEPTH) + 1);
}

#[test]
fn rule6_a_listener_added_during_a_round_is_first_called_in_the_next() {
    let order = log();
    let store = Store::new(s0());
    let (o, s) = (Arc::clone(&order), store.clone());
    let added = Arc::new(Mutex::new(None));
    let a = Arc::clone(&added);
    let _adder = store.subscribe(move |_state| {
        let mut added = a.lock().unwrap();
        if added.is_none() {
            let o = Arc::clone(&o);
            *added = Some(s.subscribe(move |st| push(&o, format!("late {}", st.n))));
        }
    });
    store.update(|d| d.n = 1);
    assert!(entries(&order).is_empty());
    store.update(|d| d.n = 2);
    assert_eq!(entries(&order), ["late 2"]);
    added.lock().unwrap().take();
}

#[test]
fn rule6_a_listener_dropped_during_a_round_is_not_called_later_in_it() {
    let order = log();
    let store = Store::new(s0());
    let victim: Arc<Mutex<Option<strata_store::Subscription>>> = Arc::new(Mutex::new(None));
    let v = Arc::clone(&victim);
    let o = Arc::clone(&order);
    let _killer = store.subscribe(move |st| {
        push(&o, format!("killer {}", st.n));
        v.lock().unwrap().take();
    });
    let o = Arc::clone(&order);
    *victim.lock().unwrap() = Some(store.subscribe(move |st| push(&o, format!("victim {}", st.n))));
    store.update(|d| d.n = 1);
    store.update(|d| d.n = 2);
    assert_eq!(entries(&order), ["killer 1", "killer 2"]);
}

#[test]
fn rule7_a_panicking_listener_leaves_the_store_usable_and_delivers_what_was_queued() {
    let order = log();
    let store = Store::new(s0());
    let (o, s) = (Arc::clone(&order), store.clone());
    let _l = store.subscribe(move |st| {
        push(&o, format!("saw {}", st.n));
        if st.n == 1 {
            s.update(|d| d.n = 2); // queued behind the panicking round
            panic!("listener failure");
        }
    });
    let err = catch_unwind(AssertUnwindSafe(|| store.update(|d| d.n = 1)));
    assert!(err.is_err());
    assert_eq!(store.get().n, 2, "both commits stay committed");
    // The next update delivers the queued commit first, then its own, in order.
    within_deadline({
        let store = store.clone();
        move || store.update(|d| d.n = 3)
    });
    assert_eq!(entries(&order), ["saw 1", "saw 2", "saw 3"]);
}

#[test]
fn ui2_a_selection_reports_only_changes_of_its_slice() {
    let store = Store::new(s0());
    let mut verbose = store.select(|s| s.verbose);
    store.update(|d| d.n += 1);
    assert!(!verbose.changed(&store));
    store.update(|d| d.verbose = true);
    assert!(verbose.changed(&store));
    assert!(*verbose.value());
    assert!(!verbose.changed(&store));
}

#[test]
#[cfg(debug_assertions)]
fn ui2_selecting_the_whole_state_is_rejected_in_debug_builds() {
    let store = Store::new(s0());
    let err = catch_unwind(AssertUnwindSafe(|| store.select(|s| s.clone()))).unwrap_err();
    let msg = panic_text(&*err);
    assert!(msg.contains("returns the whole state"), "{msg}");
    let err = catch_unwind(AssertUnwindSafe(|| store.select_arc(|_| Arc::new(0u8)))).unwrap_err();
    let msg = panic_text(&*err);
    assert!(msg.contains("builds a new Arc on every call"), "{msg}");
}

#[test]
fn ui3_a_setter_updates_and_subscribes_to_nothing() {
    let store = Store::new(s0());
    let setter = store.setter();
    assert_eq!(store.listener_count(), 0);
    setter.update(|d| d.n = 4);
    assert_eq!(store.get().n, 4);
    assert_eq!(store.listener_count(), 0);
}

#[test]
fn subscribe_select_calls_back_only_when_the_slice_changes() {
    let order = log();
    let store = Store::new(s0());
    let o = Arc::clone(&order);
    let _sub = store.subscribe_select(|s| s.tag, move |t| push(&o, (*t).to_string()));
    store.update(|d| d.n += 1);
    store.update(|d| d.tag = "x");
    store.update(|d| d.n += 1);
    store.update(|d| d.tag = "y");
    assert_eq!(entries(&order), ["x", "y"]);
}

#[test]
fn changed_resolves_on_a_commit_from_another_thread() {
    let store = Store::new(s0());
    let since = store.version();
    let writer = {
        let store = store.clone();
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            store.update(|d| d.n = 1);
        })
    };
    let now = within_deadline(move || futures::executor::block_on(store.changed(since)));
    assert_eq!(now, Version(1));
    writer.join().unwrap();
}

#[test]
fn changed_is_pending_until_a_commit_and_ignores_no_change_updates() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    let store = Store::new(s0());
    let mut fut = Box::pin(store.changed(store.version()));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    let _ = store.set(Arc::clone);
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    store.update(|d| d.n = 1);
    assert_eq!(fut.as_mut().poll(&mut cx), Poll::Ready(Version(1)));
}

#[test]
fn a_listener_of_one_store_may_update_another_store() {
    let a = Store::new(s0());
    let b = Store::new(s0());
    let order = log();
    let o = Arc::clone(&order);
    let _b_listener = b.subscribe(move |s| push(&o, format!("b {}", s.n)));
    let b2 = b.clone();
    let _a_listener = a.subscribe(move |s| {
        b2.update(|d| d.n = s.n * 10);
    });
    within_deadline(move || a.update(|d| d.n = 2));
    assert_eq!(entries(&order), ["b 20"]);
}
