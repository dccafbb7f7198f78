//! The suite on the stores replicas share, PostgreSQL and Redis, and what only they do: two
//! replicas (two connections) race on one record, and what one publishes reaches the other.
//! Each needs a server: `tests/interop/run.sh` starts them (`scripts/pg.sh`,
//! `scripts/redis.sh`) and runs these with `--ignored`, the URLs in `ABILITIES_TEST_POSTGRES`
//! and `ABILITIES_TEST_REDIS`; without them the tests fail.

use std::sync::Arc;
use std::time::Duration;

use abilities::store::{
    PostgresStore, RedisStore, SessionEvent, SessionRecord, Spend, Store, TaskEvent, TaskLimits,
    TaskSignal,
};
use serde_json::json;

use super::{now_ms, suite, task, token, unique};

fn url(variable: &str, starts: &str) -> String {
    std::env::var(variable).unwrap_or_else(|_| {
        panic!(
            "{variable} names the server to test (tests/interop/run.sh starts one with {starts})"
        )
    })
}

async fn postgres() -> (Arc<dyn Store>, Arc<dyn Store>) {
    let url = url("ABILITIES_TEST_POSTGRES", "scripts/pg.sh");
    // Two replicas connecting at once both find (or create) the tables.
    let (a, b) = tokio::join!(PostgresStore::connect(&url), PostgresStore::connect(&url));
    (Arc::new(a.unwrap()), Arc::new(b.unwrap()))
}

async fn redis() -> (Arc<dyn Store>, Arc<dyn Store>) {
    let url = url("ABILITIES_TEST_REDIS", "scripts/redis.sh");
    let (a, b) = tokio::join!(RedisStore::connect(&url), RedisStore::connect(&url));
    (Arc::new(a.unwrap()), Arc::new(b.unwrap()))
}

/// The suite, then what one replica writes the other reads and races on.
async fn the_shared_store(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    assert!(a.is_shared());
    suite(Arc::clone(&a)).await;
    let t = token(&unique("shared"), now_ms());
    assert!(a.issue_token(&t, 1).await.unwrap());
    assert_eq!(b.spend_token(&t).await.unwrap(), Spend::Spent);
    assert_eq!(a.spend_token(&t).await.unwrap(), Spend::AlreadyUsed);
    let id = unique("task");
    a.insert_task(task(&id, now_ms()), TaskLimits::NONE)
        .await
        .unwrap();
    assert_eq!(b.task(&id).await.unwrap().unwrap().id, id);
}

async fn fans_resource_updates_out(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    let (mut heard_a, mut heard_b) = (a.updates().unwrap(), b.updates().unwrap());
    let uri = format!("todo://{}", unique("list"));
    // The listeners connect in the background: publish until B hears.
    let heard = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            a.publish(&uri).await.unwrap();
            // Other tests share the server: only this URI counts.
            if let Ok(Ok(got)) =
                tokio::time::timeout(Duration::from_millis(200), heard_b.recv()).await
                && got == uri
            {
                break got;
            }
        }
    })
    .await
    .expect("replica B hears A's update");
    assert_eq!(heard, uri);
    // A does not hear its own echo (its subscribers were told directly): what it hears is
    // B's (its listener, too, connects in the background: B publishes until A hears).
    let from_b = format!("todo://{}", unique("from-b"));
    let got = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            b.publish(&from_b).await.unwrap();
            if let Ok(Ok(got)) =
                tokio::time::timeout(Duration::from_millis(200), heard_a.recv()).await
                && (got == from_b || got == uri)
            {
                break got;
            }
        }
    })
    .await
    .expect("replica A hears B's update");
    assert_eq!(got, from_b, "A heard its own update {uri}");
}

async fn fans_task_events_out(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    let mut heard = b.task_events().unwrap();
    let id = unique("task");
    // Other tests share the server and publish task events of their own: only this id's
    // count.
    let ours = |event: &TaskEvent| match event {
        TaskEvent::Changed(of) | TaskEvent::Signalled(of) => *of == id,
        _ => false,
    };
    // The listeners connect in the background: publish until B hears.
    let changed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            a.publish_task(&id).await.unwrap();
            if let Ok(Ok(got)) =
                tokio::time::timeout(Duration::from_millis(200), heard.recv()).await
                && ours(&got)
            {
                break got;
            }
        }
    })
    .await
    .expect("replica B hears A's task change");
    assert_eq!(changed, TaskEvent::Changed(id.clone()));
    a.signal_task(&id, &TaskSignal::Cancel, now_ms() + 60_000)
        .await
        .unwrap();
    let signalled = loop {
        let got = tokio::time::timeout(Duration::from_secs(5), heard.recv())
            .await
            .unwrap()
            .unwrap();
        if ours(&got) && got != TaskEvent::Changed(id.clone()) {
            break got;
        }
    };
    assert_eq!(signalled, TaskEvent::Signalled(id.clone()));
    assert_eq!(
        b.take_task_signals(std::slice::from_ref(&id))
            .await
            .unwrap(),
        vec![(id, TaskSignal::Cancel)]
    );
}

async fn fans_session_events_out(a: Arc<dyn Store>, b: Arc<dyn Store>) {
    let mut heard = b.session_events().unwrap();
    let id = unique("session");
    let ours = |event: &SessionEvent| match event {
        SessionEvent::Changed(of) | SessionEvent::Ended(of) | SessionEvent::Forwarded(of) => {
            *of == id
        }
        _ => false,
    };
    let record = SessionRecord {
        id: id.clone(),
        state: json!({"owner": "ada"}),
        expires_at_ms: now_ms() + 60_000,
    };
    a.put_session(&record).await.unwrap();
    // The listeners connect in the background: change it until B hears.
    let mut state = record.state.clone();
    let changed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let next = SessionRecord {
                state: json!({"owner": "ada", "n": state.get("n").and_then(serde_json::Value::as_u64).unwrap_or(0) + 1}),
                ..record.clone()
            };
            assert!(a.update_session(&next, &state).await.unwrap());
            state = next.state;
            if let Ok(Ok(got)) =
                tokio::time::timeout(Duration::from_millis(200), heard.recv()).await
                && ours(&got)
            {
                break got;
            }
        }
    })
    .await
    .expect("replica B hears A's session change");
    assert_eq!(changed, SessionEvent::Changed(id.clone()));
    assert_eq!(
        b.session(&id, now_ms()).await.unwrap().unwrap().state,
        state
    );
    let reply = json!({"jsonrpc": "2.0", "id": 0, "result": {"action": "decline"}});
    a.forward_to_session(&id, &reply, now_ms() + 60_000)
        .await
        .unwrap();
    let forwarded = loop {
        let got = tokio::time::timeout(Duration::from_secs(5), heard.recv())
            .await
            .unwrap()
            .unwrap();
        if ours(&got) && got != SessionEvent::Changed(id.clone()) {
            break got;
        }
    };
    assert_eq!(forwarded, SessionEvent::Forwarded(id.clone()));
    assert_eq!(b.take_forwarded(&id).await.unwrap(), [reply]);
    assert!(a.delete_session(&id).await.unwrap());
    let ended = loop {
        let got = tokio::time::timeout(Duration::from_secs(5), heard.recv())
            .await
            .unwrap()
            .unwrap();
        if ours(&got) && matches!(got, SessionEvent::Ended(_)) {
            break got;
        }
    };
    assert_eq!(ended, SessionEvent::Ended(id.clone()));
    assert_eq!(b.session(&id, now_ms()).await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: tests/interop/run.sh runs it with a server"]
async fn the_postgres_store() {
    let (a, b) = postgres().await;
    the_shared_store(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: tests/interop/run.sh runs it with a server"]
async fn postgres_fans_resource_updates_out_to_the_other_replicas() {
    let (a, b) = postgres().await;
    fans_resource_updates_out(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: tests/interop/run.sh runs it with a server"]
async fn postgres_fans_task_events_out_to_the_other_replicas() {
    let (a, b) = postgres().await;
    fans_task_events_out(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: tests/interop/run.sh runs it with a server"]
async fn postgres_fans_session_events_out_to_the_other_replicas() {
    let (a, b) = postgres().await;
    fans_session_events_out(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis: tests/interop/run.sh runs it with a server"]
async fn the_redis_store() {
    let (a, b) = redis().await;
    the_shared_store(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis: tests/interop/run.sh runs it with a server"]
async fn redis_fans_resource_updates_out_to_the_other_replicas() {
    let (a, b) = redis().await;
    fans_resource_updates_out(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis: tests/interop/run.sh runs it with a server"]
async fn redis_fans_task_events_out_to_the_other_replicas() {
    let (a, b) = redis().await;
    fans_task_events_out(a, b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Redis: tests/interop/run.sh runs it with a server"]
async fn redis_fans_session_events_out_to_the_other_replicas() {
    let (a, b) = redis().await;
    fans_session_events_out(a, b).await;
}
