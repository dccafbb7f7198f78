//! One suite for every store: the in-memory one, the SQLite one, and the PostgreSQL and Redis
//! ones replicas share (`shared`).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail loudly")]

mod shared;

use std::sync::Arc;
use std::time::Duration;

use abilities::store::{
    Claim, Claimed, MemoryStore, RateTaken, SessionRecord, Spend, SqliteStore, Store, TaskInsert,
    TaskLimits, TaskRecord, TaskSignal, TaskStatus, TokenRecord,
};
use serde_json::json;

fn unique(what: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{what}-{}-{nanos}-{n}", std::process::id())
}

fn now_ms() -> u64 {
    u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

fn task(id: &str, created_at_ms: u64) -> TaskRecord {
    TaskRecord {
        id: id.to_owned(),
        owner: "ada".to_owned(),
        status: TaskStatus::Working,
        status_message: Some("started".to_owned()),
        created_at_ms,
        updated_at_ms: created_at_ms,
        ttl_ms: 60_000,
        poll_interval_ms: 100,
        alive_at_ms: created_at_ms,
        input_requests: None,
        result: None,
        error: None,
    }
}

fn token(holder: &str, now: u64) -> TokenRecord {
    TokenRecord {
        id: unique("token"),
        holder: holder.to_owned(),
        operation: "delete_todo".to_owned(),
        params: "d1".to_owned(),
        issued_at_ms: now,
        expires_at_ms: now + 60_000,
    }
}

async fn tasks_round_trip(store: &dyn Store) {
    let now = now_ms();
    let id = unique("task");
    store
        .insert_task(task(&id, now), abilities::store::TaskLimits::NONE)
        .await
        .unwrap();
    let read = store.task(&id).await.unwrap().unwrap();
    // A shared store may mark it alive by its own clock.
    assert!(read.alive_at_ms.abs_diff(now) < 5_000, "{read:?}");
    assert_eq!(
        TaskRecord {
            alive_at_ms: now,
            ..read.clone()
        },
        task(&id, now)
    );
    // Only touch_tasks moves alive_at_ms on: an update keeps what is there.
    store
        .touch_tasks(std::slice::from_ref(&id), now + 50)
        .await
        .unwrap();
    let touched = store.task(&id).await.unwrap().unwrap().alive_at_ms;
    assert!(touched >= read.alive_at_ms);
    let mut later = read.clone();
    later.alive_at_ms = 0;
    later.status_message = Some("later".to_owned());
    store.update_task(later).await.unwrap();
    let read = store.task(&id).await.unwrap().unwrap();
    assert_eq!(
        (read.alive_at_ms, read.status_message.as_deref()),
        (touched, Some("later"))
    );
    let mut done = read.clone();
    done.status = TaskStatus::Completed;
    done.status_message = None;
    done.updated_at_ms = now + 5;
    // Key order and every character survive: the result is sent again as it was.
    done.result = Some(json!({"z": 1, "a": "é \u{1F600}", "content": []}));
    store.update_task(done.clone()).await.unwrap();
    let read = store.task(&id).await.unwrap().unwrap();
    assert_eq!(read, done);
    assert_eq!(
        serde_json::to_string(&read.result).unwrap(),
        serde_json::to_string(&done.result).unwrap()
    );
    // A finished task stays as it ended, and is not failed as abandoned.
    let mut again = done.clone();
    again.status = TaskStatus::Working;
    again.status_message = Some("running again".to_owned());
    store.update_task(again.clone()).await.unwrap();
    assert_eq!(store.task(&id).await.unwrap().unwrap(), done);
    assert!(!store.fail_abandoned(&again, 0).await.unwrap());
    assert_eq!(store.task(&unique("nothing")).await.unwrap(), None);
    // A running task marked alive within the lease is left; past it, it is failed.
    let running = unique("running");
    store
        .insert_task(task(&running, now), abilities::store::TaskLimits::NONE)
        .await
        .unwrap();
    let mut failed = task(&running, now);
    failed.status = TaskStatus::Failed;
    failed.status_message = Some("stopped".to_owned());
    failed.error = Some(json!({"code": -32603, "message": "stopped"}));
    assert!(!store.fail_abandoned(&failed, 60_000).await.unwrap());
    assert_eq!(
        store.task(&running).await.unwrap().unwrap().status,
        TaskStatus::Working
    );
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert!(store.fail_abandoned(&failed, 0).await.unwrap());
    let read = store.task(&running).await.unwrap().unwrap();
    assert_eq!(
        (read.status, read.error),
        (TaskStatus::Failed, failed.error)
    );
    let old = unique("old");
    store
        .insert_task(task(&old, 1_000), abilities::store::TaskLimits::NONE)
        .await
        .unwrap();
    assert!(store.sweep(now).await.unwrap() >= 1);
    assert_eq!(store.task(&old).await.unwrap(), None);
    assert!(
        store.task(&id).await.unwrap().is_some(),
        "a live task stays"
    );
}

async fn tokens_spend_once_and_are_limited_per_holder(store: &dyn Store) {
    let now = now_ms();
    let (ada, bob) = (unique("ada"), unique("bob"));
    let first = token(&ada, now);
    assert!(store.issue_token(&first, 2).await.unwrap());
    assert!(store.issue_token(&token(&ada, now), 2).await.unwrap());
    // Ada holds two: a third is refused, and Bob is not affected.
    assert!(!store.issue_token(&token(&ada, now), 2).await.unwrap());
    assert!(store.issue_token(&token(&bob, now), 2).await.unwrap());
    let mut other = first.clone();
    other.params = "d2".to_owned();
    assert_eq!(
        store.spend_token(&other).await.unwrap(),
        Spend::OtherScope {
            operation: "delete_todo".to_owned()
        }
    );
    let mut stolen = first.clone();
    stolen.holder = bob.clone();
    assert_eq!(store.spend_token(&stolen).await.unwrap(), Spend::Unknown);
    assert_eq!(store.spend_token(&first).await.unwrap(), Spend::Spent);
    assert_eq!(store.spend_token(&first).await.unwrap(), Spend::AlreadyUsed);
    // Spent, it no longer counts against Ada.
    assert!(store.issue_token(&token(&ada, now), 2).await.unwrap());
    // Expired tokens neither count nor stay.
    let stale = TokenRecord {
        expires_at_ms: now - 1,
        ..token(&bob, now - 10)
    };
    assert!(store.issue_token(&stale, 5).await.unwrap());
    assert!(store.issue_token(&token(&bob, now), 2).await.unwrap());
    store.sweep(now).await.unwrap();
    assert_eq!(store.spend_token(&stale).await.unwrap(), Spend::Unknown);
}

async fn a_token_is_spent_once_under_a_race(store: Arc<dyn Store>) {
    let t = token(&unique("racer"), now_ms());
    assert!(store.issue_token(&t, 10).await.unwrap());
    let spends = (0..8).map(|_| {
        let (store, t) = (Arc::clone(&store), t.clone());
        tokio::spawn(async move { store.spend_token(&t).await.unwrap() })
    });
    let mut spent = 0;
    for spend in spends {
        if spend.await.unwrap() == Spend::Spent {
            spent += 1;
        }
    }
    assert_eq!(spent, 1);
}

fn claim(holder: &str, key: &str, digest: &str, now_ms: u64) -> Claim {
    Claim {
        holder: holder.to_owned(),
        key: key.to_owned(),
        digest: digest.to_owned(),
        now_ms,
        expires_at_ms: now_ms + 60_000,
        owner: "replica-1".to_owned(),
        lease_until_ms: now_ms + 30_000,
    }
}

/// A claim whose owner stopped renewing it reads as abandoned, not running; the owner's
/// renewal moves its lease on (nobody else's does), and an outcome recorded late still
/// replays.
async fn a_claim_whose_lease_ran_out_is_abandoned(store: &dyn Store) {
    let now = now_ms();
    let (ada, key) = (unique("ada"), unique("key"));
    let mut first = claim(&ada, &key, "create:1", now);
    first.lease_until_ms = now + 1_000;
    assert_eq!(store.claim(&first).await.unwrap(), Claimed::New);
    let later = claim(&ada, &key, "create:1", now + 5_000);
    assert_eq!(
        store.claim(&later).await.unwrap(),
        Claimed::Abandoned {
            started_at_ms: now,
            lease_until_ms: now + 1_000
        }
    );
    // Another owner cannot renew it; its own can.
    store
        .renew(&ada, &key, "replica-2", now + 9_000)
        .await
        .unwrap();
    assert!(matches!(
        store.claim(&later).await.unwrap(),
        Claimed::Abandoned { .. }
    ));
    store
        .renew(&ada, &key, "replica-1", now + 9_000)
        .await
        .unwrap();
    assert_eq!(
        store.claim(&later).await.unwrap(),
        Claimed::Running { started_at_ms: now }
    );
    // Still another call's key, whatever its lease.
    assert_eq!(
        store
            .claim(&claim(&ada, &key, "create:2", now + 5_000))
            .await
            .unwrap(),
        Claimed::Conflict
    );
    let outcome = json!({"error": {"code": -32603, "message": "the store failed"}});
    store
        .settle(&ada, &key, "replica-1", &outcome)
        .await
        .unwrap();
    let Claimed::Done { outcome: again } = store
        .claim(&claim(&ada, &key, "create:1", now + 50_000))
        .await
        .unwrap()
    else {
        panic!("a settled claim replays, its lease long gone");
    };
    assert_eq!(again, outcome);
}

async fn idempotency_keys_run_once(store: &dyn Store) {
    let now = now_ms();
    let (ada, key) = (unique("ada"), unique("key"));
    let first = claim(&ada, &key, "create:1", now);
    assert_eq!(store.claim(&first).await.unwrap(), Claimed::New);
    assert_eq!(
        store.claim(&first).await.unwrap(),
        Claimed::Running { started_at_ms: now }
    );
    assert_eq!(
        store
            .claim(&claim(&ada, &key, "create:2", now))
            .await
            .unwrap(),
        Claimed::Conflict
    );
    // The same key of another holder is another key.
    assert_eq!(
        store
            .claim(&claim(&unique("bob"), &key, "create:2", now))
            .await
            .unwrap(),
        Claimed::New
    );
    let outcome = json!({"complete": {"z": 1, "content": [{"type": "text", "text": "7"}]}});
    store
        .settle(&ada, &key, "replica-1", &outcome)
        .await
        .unwrap();
    let Claimed::Done { outcome: again } = store.claim(&first).await.unwrap() else {
        panic!("a settled claim replays");
    };
    assert_eq!(again.to_string(), outcome.to_string());
    // Releasing a settled claim leaves it; releasing a running one frees the key.
    store.release(&ada, &key, "replica-1").await.unwrap();
    assert!(matches!(
        store.claim(&first).await.unwrap(),
        Claimed::Done { .. }
    ));
    let other = unique("key");
    let running = claim(&ada, &other, "x", now);
    assert_eq!(store.claim(&running).await.unwrap(), Claimed::New);
    store.release(&ada, &other, "replica-1").await.unwrap();
    assert_eq!(store.claim(&running).await.unwrap(), Claimed::New);
    // Past its window a key is free again, for anything.
    let mut later = claim(&ada, &key, "create:3", now + 120_000);
    later.owner = "replica-2".to_owned();
    assert_eq!(store.claim(&later).await.unwrap(), Claimed::New);
    // The first claim's owner, late, neither records its outcome on the new claim nor
    // releases it.
    store
        .settle(&ada, &key, "replica-1", &json!({"late": true}))
        .await
        .unwrap();
    store.release(&ada, &key, "replica-1").await.unwrap();
    assert_eq!(
        store.claim(&later).await.unwrap(),
        Claimed::Running {
            started_at_ms: now + 120_000
        }
    );
    // A claim made before claims had leases (lease 0) may still be running.
    let (old, key) = (unique("old"), unique("key"));
    let mut legacy = claim(&old, &key, "x", now);
    legacy.owner = String::new();
    legacy.lease_until_ms = 0;
    assert_eq!(store.claim(&legacy).await.unwrap(), Claimed::New);
    assert_eq!(
        store
            .claim(&claim(&old, &key, "x", now + 50_000))
            .await
            .unwrap(),
        Claimed::Running { started_at_ms: now }
    );
}

async fn a_key_is_claimed_once_under_a_race(store: Arc<dyn Store>) {
    let c = claim(&unique("racer"), &unique("key"), "d", now_ms());
    let claims = (0..8).map(|_| {
        let (store, c) = (Arc::clone(&store), c.clone());
        tokio::spawn(async move { store.claim(&c).await.unwrap() })
    });
    let mut new = 0;
    for claimed in claims {
        if claimed.await.unwrap() == Claimed::New {
            new += 1;
        }
    }
    assert_eq!(new, 1);
}

/// 3 calls per second: the burst of 3, then refused until an interval (333 ms) has passed;
/// another key has its own budget.
async fn rate_budgets_allow_the_burst_then_refuse(store: &dyn Store) {
    let key = unique("posts/create alice");
    let now = now_ms();
    for _ in 0..3 {
        assert_eq!(
            store.take_rate(&key, 3, 1000, now).await.unwrap(),
            RateTaken::Allowed
        );
    }
    let RateTaken::Limited { retry_after_ms } = store.take_rate(&key, 3, 1000, now).await.unwrap()
    else {
        panic!("the fourth call of a 3/s budget was allowed");
    };
    assert!((1..=340).contains(&retry_after_ms), "{retry_after_ms}");
    let other = unique("posts/create bob");
    assert_eq!(
        store.take_rate(&other, 3, 1000, now).await.unwrap(),
        RateTaken::Allowed
    );
}

/// Of 8 racers for a budget of 5, exactly 5 get a call.
async fn a_rate_budget_is_shared_under_a_race(store: Arc<dyn Store>) {
    let key = unique("racer");
    let now = now_ms();
    let takes = (0..8).map(|_| {
        let (store, key) = (Arc::clone(&store), key.clone());
        tokio::spawn(async move { store.take_rate(&key, 5, 60_000, now).await.unwrap() })
    });
    let mut allowed = 0;
    for taken in takes {
        if taken.await.unwrap() == RateTaken::Allowed {
            allowed += 1;
        }
    }
    assert_eq!(allowed, 5);
}

async fn task_limits_hold_under_a_race(store: Arc<dyn Store>) {
    let owner = unique("racing-owner");
    let limits = TaskLimits {
        per_owner: Some(3),
        per_server: u32::MAX,
        lease_ms: 30_000,
    };
    let racing = (0..20).map(|_| {
        let (store, owner) = (Arc::clone(&store), owner.clone());
        tokio::spawn(async move {
            let mut record = task(&unique("raced"), now_ms());
            record.owner = owner;
            store.insert_task(record, limits).await.unwrap()
        })
    });
    let mut inserted = 0;
    for insert in racing {
        match insert.await.unwrap() {
            TaskInsert::Inserted => inserted += 1,
            TaskInsert::OwnerFull { running } => assert_eq!(running, 3),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(inserted, 3);
    // A finished task does not count; the server's limit counts every owner.
    let mut done = task(&unique("done"), now_ms());
    done.owner = owner.clone();
    done.status = TaskStatus::Completed;
    assert_eq!(
        store.insert_task(done, TaskLimits::NONE).await.unwrap(),
        TaskInsert::Inserted
    );
    let full = TaskLimits {
        per_owner: None,
        per_server: 3,
        lease_ms: 30_000,
    };
    assert!(matches!(
        store
            .insert_task(task(&unique("one-more"), now_ms()), full)
            .await
            .unwrap(),
        TaskInsert::ServerFull { .. }
    ));
}

async fn task_signals_are_taken_once_in_order(store: &dyn Store) {
    let id = unique("signalled");
    let answers = TaskSignal::Answers([("go".to_owned(), json!({"action": "accept"}))].into());
    store
        .signal_task(&id, &answers, now_ms() + 60_000)
        .await
        .unwrap();
    store
        .signal_task(&id, &TaskSignal::Cancel, now_ms() + 60_000)
        .await
        .unwrap();
    let other = unique("other");
    let taken = store.take_task_signals(&[id.clone(), other]).await.unwrap();
    assert_eq!(
        taken,
        vec![(id.clone(), answers), (id.clone(), TaskSignal::Cancel)]
    );
    assert!(store.take_task_signals(&[id]).await.unwrap().is_empty());
}

async fn sessions_are_kept_until_they_expire_or_end(store: &dyn Store) {
    let now = now_ms();
    let id = unique("session");
    let record = SessionRecord {
        id: id.clone(),
        state: json!({"initialize": {"protocolVersion": "2025-11-25"}, "owner": "ada"}),
        expires_at_ms: now + 1_000,
    };
    store.put_session(&record).await.unwrap();
    assert_eq!(store.session(&id, now).await.unwrap(), Some(record.clone()));
    // Past its expiry it is not served, however long it waits to be swept.
    assert_eq!(store.session(&id, now + 1_001).await.unwrap(), None);
    // A replica still serving it moves the expiry on (never back); the store names the
    // sessions it no longer keeps.
    let gone = unique("session");
    let touched = store
        .touch_sessions(&[id.clone(), gone.clone()], now + 5_000)
        .await
        .unwrap();
    assert_eq!(touched, [gone]);
    store
        .touch_sessions(std::slice::from_ref(&id), now + 2_000)
        .await
        .unwrap();
    let touched = store.session(&id, now + 4_000).await.unwrap().unwrap();
    assert_eq!(touched.expires_at_ms, now + 5_000);
    // A change is made only on the state it was made from.
    let changed = SessionRecord {
        state: json!({"initialize": {}, "owner": "ada", "logLevel": "debug"}),
        ..touched.clone()
    };
    assert!(
        !store
            .update_session(&changed, &json!({"stale": true}))
            .await
            .unwrap()
    );
    assert!(
        store
            .update_session(&changed, &touched.state)
            .await
            .unwrap()
    );
    assert_eq!(
        store.session(&id, now).await.unwrap(),
        Some(changed.clone())
    );
    assert!(
        !store
            .update_session(&changed, &touched.state)
            .await
            .unwrap()
    );
    // Ended: gone, a second end finds nothing, and a change does not bring it back.
    assert!(store.delete_session(&id).await.unwrap());
    assert_eq!(store.session(&id, now).await.unwrap(), None);
    assert!(!store.delete_session(&id).await.unwrap());
    assert!(
        !store
            .update_session(&changed, &changed.state)
            .await
            .unwrap()
    );
    assert_eq!(store.session(&id, now).await.unwrap(), None);
    // An expired session is swept.
    let old = unique("session");
    let expired = SessionRecord {
        id: old.clone(),
        state: json!({}),
        expires_at_ms: now - 10,
    };
    store.put_session(&expired).await.unwrap();
    assert!(store.sweep(now).await.unwrap() >= 1);
    assert!(!store.delete_session(&old).await.unwrap());
}

async fn forwarded_messages_are_taken_once_in_order(store: &dyn Store) {
    let id = unique("session");
    let first = json!({"jsonrpc": "2.0", "id": 0, "result": {"action": "accept"}});
    let second = json!({"jsonrpc": "2.0", "id": 1, "result": {"roots": []}});
    let later = now_ms() + 60_000;
    store.forward_to_session(&id, &first, later).await.unwrap();
    store.forward_to_session(&id, &second, later).await.unwrap();
    let other = unique("session");
    assert!(store.take_forwarded(&other).await.unwrap().is_empty());
    assert_eq!(store.take_forwarded(&id).await.unwrap(), [first, second]);
    assert!(store.take_forwarded(&id).await.unwrap().is_empty());
}

/// A stream keeps its messages in order, with positions that increase across streams; a
/// reader reads several streams at once from a position, and one that starts from the last
/// position reads only what comes next; expired messages are swept.
async fn streams_keep_messages_in_order_for_a_while(store: &dyn Store) {
    let later = now_ms() + 60_000;
    let (mine, followed, other) = (unique("session"), unique("resource"), unique("session"));
    let start = store.read_streams(&[], 0, 10).await.unwrap().last;
    let first = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": 1}});
    let second = json!({"jsonrpc": "2.0", "method": "notifications/resources/updated"});
    let third = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": 3}});
    let a = store.append_to_stream(&mine, &first, later).await.unwrap();
    let b = store
        .append_to_stream(&followed, &second, later)
        .await
        .unwrap();
    let c = store.append_to_stream(&other, &third, later).await.unwrap();
    let d = store.append_to_stream(&mine, &third, later).await.unwrap();
    assert!(
        start < a && a < b && b < c && c < d,
        "{start} {a} {b} {c} {d}"
    );
    let streams = [mine.clone(), followed.clone()];
    let read = store.read_streams(&streams, start, 10).await.unwrap();
    let found: Vec<(u64, &str, &serde_json::Value)> = read
        .events
        .iter()
        .map(|e| (e.position, e.stream.as_str(), &e.message))
        .collect();
    assert_eq!(
        found,
        [
            (a, mine.as_str(), &first),
            (b, followed.as_str(), &second),
            (d, mine.as_str(), &third)
        ]
    );
    assert!(read.last >= d);
    // From a position; at most `limit`.
    let read = store.read_streams(&streams, a, 1).await.unwrap();
    assert_eq!(read.events.len(), 1);
    assert_eq!(read.events[0].position, b);
    // From the last position: nothing yet, then only what comes next.
    let now = store.read_streams(&streams, 0, 0).await.unwrap().last;
    assert!(
        store
            .read_streams(&streams, now, 10)
            .await
            .unwrap()
            .events
            .is_empty()
    );
    let e = store
        .append_to_stream(&followed, &second, later)
        .await
        .unwrap();
    let read = store.read_streams(&streams, now, 10).await.unwrap();
    assert_eq!(
        read.events.iter().map(|e| e.position).collect::<Vec<_>>(),
        [e]
    );
    // Expired, swept.
    let old = unique("session");
    store
        .append_to_stream(&old, &first, now_ms() - 10)
        .await
        .unwrap();
    assert!(store.sweep(now_ms()).await.unwrap() >= 1);
    assert!(
        store
            .read_streams(&[old], 0, 10)
            .await
            .unwrap()
            .events
            .is_empty()
    );
}

/// A caller's tasks are listed in the order they were made, paged by position, without
/// another caller's or an expired one.
async fn a_callers_tasks_are_listed_in_order(store: &dyn Store) {
    let owner = unique("lister");
    let now = now_ms();
    let mut made = Vec::new();
    // Two made in one millisecond: the id breaks the tie.
    for (n, at) in [(0, now), (1, now + 1), (2, now + 1), (3, now + 2)] {
        let mut record = task(&format!("{owner}-{n}"), at);
        record.owner.clone_from(&owner);
        store.insert_task(record, TaskLimits::NONE).await.unwrap();
        made.push(format!("{owner}-{n}"));
    }
    let mut expired = task(&unique("expired"), now.saturating_sub(120_000));
    expired.owner.clone_from(&owner);
    store.insert_task(expired, TaskLimits::NONE).await.unwrap();
    store
        .insert_task(task(&unique("other"), now), TaskLimits::NONE)
        .await
        .unwrap();
    let ids = |page: Vec<TaskRecord>| page.into_iter().map(|r| r.id).collect::<Vec<_>>();
    let first = store.tasks_of(&owner, now, None, 3).await.unwrap();
    let last = first
        .last()
        .map(|r| (r.created_at_ms, r.id.clone()))
        .unwrap();
    assert_eq!(ids(first), made[..3]);
    let rest = store
        .tasks_of(&owner, now, Some((last.0, &last.1)), 3)
        .await
        .unwrap();
    assert_eq!(ids(rest), made[3..]);
}

async fn suite(store: Arc<dyn Store>) {
    a_callers_tasks_are_listed_in_order(&*store).await;
    streams_keep_messages_in_order_for_a_while(&*store).await;
    sessions_are_kept_until_they_expire_or_end(&*store).await;
    forwarded_messages_are_taken_once_in_order(&*store).await;
    task_limits_hold_under_a_race(Arc::clone(&store)).await;
    task_signals_are_taken_once_in_order(&*store).await;
    rate_budgets_allow_the_burst_then_refuse(&*store).await;
    a_rate_budget_is_shared_under_a_race(Arc::clone(&store)).await;
    tasks_round_trip(&*store).await;
    tokens_spend_once_and_are_limited_per_holder(&*store).await;
    a_token_is_spent_once_under_a_race(Arc::clone(&store)).await;
    idempotency_keys_run_once(&*store).await;
    a_claim_whose_lease_ran_out_is_abandoned(&*store).await;
    a_key_is_claimed_once_under_a_race(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_memory_store() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    assert!(store.updates().is_none() && !store.is_shared());
    suite(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlite_store() {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::memory().unwrap());
    assert!(store.updates().is_none() && !store.is_shared());
    suite(store).await;
    let dir = std::env::temp_dir().join(unique("abilities-store"));
    std::fs::create_dir_all(&dir).unwrap();
    suite(Arc::new(SqliteStore::open(dir.join("store.db")).unwrap())).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A store file made before idempotency claims had an owner and a lease opens, its columns
/// added, and a claim it holds reads as running (it may be), never as abandoned.
#[tokio::test]
async fn an_older_sqlite_store_gains_owners_and_leases() {
    let dir = std::env::temp_dir().join(unique("abilities-old-store"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("store.db");
    let now = now_ms();
    {
        let db = rusqlite::Connection::open(&path).unwrap();
        db.execute_batch(
            "CREATE TABLE abilities_idempotency (
                holder TEXT NOT NULL, key TEXT NOT NULL, digest TEXT NOT NULL,
                started_at_ms INTEGER NOT NULL, expires_at_ms INTEGER NOT NULL, outcome TEXT,
                PRIMARY KEY (holder, key));",
        )
        .unwrap();
        db.execute(
            "INSERT INTO abilities_idempotency VALUES ('ada', 'k', 'd', ?1, ?2, NULL)",
            rusqlite::params![now as i64, (now + 60_000) as i64],
        )
        .unwrap();
    }
    for _ in 0..2 {
        // Opened twice: the second finds the columns there.
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(
            store
                .claim(&claim("ada", "k", "d", now + 1_000))
                .await
                .unwrap(),
            Claimed::Running { started_at_ms: now }
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
