//! SA-1 … SA-7 through the public API: a tree of nested synchronous and asynchronous
//! agents five deep, each starting a background task through the root tasks setter.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use strata_agent::context::{
    DenialCounters, NoopCallbacks, SubagentOptions, ToolUseContext, create_subagent_context,
};
use strata_agent::tools::{NoHooks, ReadStamp, ToolContext};
use strata_state::tasks::{
    LocalAgent, StopAction, TaskId, TaskKind, TaskState, TaskStatus, updaters,
};
use strata_state::{AppState, RuntimeFacts, default_app_state};
use strata_store::Store;

/// Depth 1 … 5: sync, async, sync, async, sync. A synchronous agent opts into sharing its
/// parent's setter; an asynchronous one does not.
const SHAPE: [bool; 5] = [false, true, false, true, false];

fn tree(root: &ToolUseContext) -> Vec<ToolUseContext> {
    let mut chain = vec![root.clone()];
    for (i, is_async) in SHAPE.into_iter().enumerate() {
        let parent = chain.last().unwrap();
        chain.push(create_subagent_context(
            parent,
            SubagentOptions {
                agent_id: format!("agent-{}", i + 1).into(),
                is_async,
                share_set_app_state: !is_async,
                share_abort_controller: false,
                ..Default::default()
            },
        ));
    }
    chain
}

fn root_context() -> (Store<AppState>, ToolUseContext) {
    let store = Store::new(default_app_state(RuntimeFacts::default()));
    let tools = ToolContext::new(std::env::temp_dir(), Arc::new(NoHooks));
    let root = ToolUseContext::root(&store, tools, Arc::new(NoopCallbacks));
    (store, root)
}

/// Registers a running background agent task through `ctx`'s root tasks setter, with a
/// cancellation handle; a tokio task plays the agent and reports its end when cancelled.
fn start_background_task(ctx: &ToolUseContext, n: usize) -> TaskId {
    let id = TaskId::generate('a');
    let token = ctx.cancel.child_token();
    let mut task = TaskState::new(
        id.clone(),
        format!("background work at depth {n}"),
        0,
        TaskKind::LocalAgent(LocalAgent {
            agent_id: format!("bg-{n}").into(),
            agent_type: None,
            messages: Default::default(),
            retain: false,
            disk_loaded: false,
            evict_after_ms: None,
            progress: Default::default(),
        }),
    );
    task.status = TaskStatus::Running;
    let handle_token = token.clone();
    ctx.app_state()
        .runtime
        .tasks
        .insert(id.clone(), Arc::new(move || handle_token.cancel()));
    let _ = ctx.set_app_state_for_tasks.set(updaters::register(task));
    let (setter, task_id) = (ctx.set_app_state_for_tasks.clone(), id.clone());
    tokio::spawn(async move {
        token.cancelled().await;
        let _ = setter.set(updaters::kill(task_id, 1));
    });
    id
}

/// SA-3: the tasks setter reaches the root store from every depth.
#[tokio::test]
async fn sa3_background_tasks_from_every_depth_reach_the_root_and_stop_from_it() {
    let (store, root) = root_context();
    let chain = tree(&root);
    assert_eq!(chain.last().unwrap().identity.depth, 5);

    let ids: Vec<TaskId> = chain[1..]
        .iter()
        .enumerate()
        .map(|(i, ctx)| start_background_task(ctx, i + 1))
        .collect();
    let state = store.get();
    for id in &ids {
        assert_eq!(
            state.tasks.tasks.get(id).unwrap().status,
            TaskStatus::Running,
            "task {id} is in the root store"
        );
    }

    // The user stops each one from the root.
    for id in &ids {
        match store.get().tasks.stop_or_dismiss(id) {
            StopAction::Cancel(id) => assert!(store.get().runtime.tasks.cancel(&id)),
            other => panic!("expected a cancel, got {other:?}"),
        }
    }
    let all_killed = async {
        loop {
            let state = store.get();
            if ids
                .iter()
                .all(|id| state.tasks.tasks.get(id).unwrap().status == TaskStatus::Killed)
            {
                break;
            }
            let seen = store.version();
            store.changed(seen).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), all_killed)
        .await
        .expect("every task stopped");
}

/// SA-5: cancellation flows down the tree, never up.
#[tokio::test]
async fn sa5_cancelling_an_inner_agent_cancels_its_children_and_never_its_parents() {
    let (_store, root) = root_context();
    let chain = tree(&root);
    chain[3].cancel.cancel();
    for (depth, ctx) in chain.iter().enumerate() {
        assert_eq!(ctx.cancel.is_cancelled(), depth >= 3, "depth {depth}");
    }
    // Cancelling the root reaches everyone.
    root.cancel.cancel();
    assert!(chain.iter().all(|c| c.cancel.is_cancelled()));
}

/// SA-5: sharing the abort controller is opted into.
#[tokio::test]
async fn sa5_a_shared_abort_controller_is_the_parents() {
    let (_store, root) = root_context();
    let child = create_subagent_context(
        &root,
        SubagentOptions {
            agent_id: "s".into(),
            share_abort_controller: true,
            ..Default::default()
        },
    );
    child.cancel.cancel();
    assert!(root.cancel.is_cancelled());
}

/// SA-2: a sub-agent's setter is a no-op unless it shares the parent's.
#[tokio::test]
async fn sa2_writes_reach_the_store_only_through_shared_setters() {
    let (store, root) = root_context();
    let chain = tree(&root);
    let set_verbose = |ctx: &ToolUseContext, on: bool| {
        ctx.set_app_state.apply(move |s| {
            Arc::new(AppState {
                verbose: on,
                ..AppState::clone(s)
            })
        })
    };
    assert!(
        set_verbose(&chain[1], true),
        "depth 1 is sync and shares the root setter"
    );
    assert!(store.get().verbose);
    assert!(!set_verbose(&chain[2], false), "depth 2 is async: isolated");
    assert!(
        !set_verbose(&chain[3], false),
        "depth 3 shares depth 2's no-op setter"
    );
    assert!(store.get().verbose, "no isolated write reached the root");
}

#[tokio::test]
async fn sa4_async_agents_and_their_sync_children_never_prompt() {
    let (store, root) = root_context();
    let chain = tree(&root);
    let avoid = |ctx: &ToolUseContext| {
        ctx.app_state()
            .tool_permission_context
            .should_avoid_permission_prompts
    };
    assert!(!avoid(&chain[0]));
    assert!(
        !avoid(&chain[1]),
        "a sync agent reads its parent's state as is"
    );
    assert!(
        Arc::ptr_eq(&chain[1].app_state(), &store.get()),
        "the very same state"
    );
    assert!(avoid(&chain[2]), "an async agent never prompts");
    assert!(
        avoid(&chain[3]),
        "a sync child of an async agent inherits its view"
    );
    // Already set: the reader hands back the very same state rather than a copy.
    let _ = store.update(|s| s.tool_permission_context.should_avoid_permission_prompts = true);
    assert!(Arc::ptr_eq(&chain[2].app_state(), &store.get()));
}

#[tokio::test]
async fn sa6_isolated_agents_count_their_own_denials_and_copy_read_state() {
    let (store, root) = root_context();
    root.tools.set_cwd("/p/sub".into());
    root.tools.set_env("FROM_ROOT", "1");
    root.tools.record_read(
        "/p/a.rs".into(),
        ReadStamp {
            modified: None,
            len: 3,
        },
    );
    root.discovered_skills.insert("pdf");
    let chain = tree(&root);

    let async_agent = &chain[2];
    assert!(matches!(async_agent.denials, DenialCounters::Local(_)));
    async_agent.record_permission_outcome(true);
    async_agent.record_permission_outcome(true);
    assert_eq!(async_agent.denial_tracking().consecutive, 2);
    assert_eq!(
        store.get().denial_tracking.total,
        0,
        "the root's counters are untouched"
    );

    let sync_agent = &chain[1];
    sync_agent.record_permission_outcome(true);
    assert_eq!(
        store.get().denial_tracking.total,
        1,
        "a shared setter counts in the app state"
    );

    // Read-file state is copied, not shared; sets are fresh.
    let stamp = ReadStamp {
        modified: None,
        len: 3,
    };
    assert_eq!(
        async_agent.tools.read_files().get("/p/a.rs".as_ref()),
        Some(stamp)
    );
    async_agent.tools.record_read("/p/b.rs".into(), stamp);
    assert!(
        root.tools.read_files().get("/p/b.rs".as_ref()).is_none(),
        "copied, not shared"
    );
    assert_eq!(
        async_agent.tools.cwd(),
        std::path::PathBuf::from("/p/sub"),
        "starts where the parent is"
    );
    async_agent.tools.set_cwd("/elsewhere".into());
    assert_eq!(
        root.tools.cwd(),
        std::path::PathBuf::from("/p/sub"),
        "a sub-agent's cd stays its own"
    );
    assert_eq!(
        async_agent.tools.env_overlay(),
        [("FROM_ROOT".to_string(), "1".to_string())]
    );
    assert!(async_agent.discovered_skills.is_empty());
    assert!(root.discovered_skills.contains("pdf"));
}
