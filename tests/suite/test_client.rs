//! The public test client playing a real one: scripted answers to elicitation (per question),
//! sampling and roots, only the capabilities it can answer for, every request and
//! notification it heard, and the protocol version chosen per test.

#![allow(
    clippy::expect_used,
    reason = "a broken fixture should fail the test loudly"
)]

use std::time::Duration;

use abilities::client::{Elicitation, LogLevel, Root};
use abilities::{AbilityError, Context, Server, ability};
use serde_json::{Value, json};

/// Ask two questions: a name, then whether to go on.
#[ability(semantic = "EXECUTE")]
async fn two_questions(ctx: &Context) -> Result<Value, AbilityError> {
    let text = json!({"type": "object", "properties": {"name": {"type": "string"}}});
    let name = ctx.ask("name").elicit("Your name?", text).await?;
    let flag = json!({"type": "object", "properties": {"go": {"type": "boolean"}}});
    let go = ctx.ask("go").elicit("Go on?", flag).await?;
    Ok(json!({"name": name.content, "go": go.action == abilities::client::ElicitAction::Accept}))
}

/// Ask the client's model, then the client's roots.
#[ability(semantic = "READ")]
async fn model_and_roots(ctx: &Context) -> Result<Value, AbilityError> {
    let said = ctx.sample_text("Say hi", 10).await?;
    let roots = ctx.list_roots().await?;
    let uris: Vec<String> = roots.into_iter().map(|r| r.uri).collect();
    Ok(json!({"said": said, "roots": uris}))
}

/// What the client can answer, and the version it speaks.
#[ability(semantic = "READ")]
fn client_facts(ctx: &Context) -> Value {
    json!({
        "elicit": ctx.can_elicit(), "sample": ctx.can_sample(), "roots": ctx.can_list_roots(),
        "version": ctx.protocol_version(),
    })
}

/// Log, report progress, and finish.
#[ability(semantic = "EXECUTE")]
async fn chatty_work(ctx: &Context) -> &'static str {
    ctx.log(LogLevel::Warning, json!({"step": "started"})).await;
    ctx.progress(1.0, Some(2.0), Some("half")).await;
    "done"
}

/// Delete a note: confirmed by the user first.
#[ability(semantic = "DELETE")]
fn remove_note(id: u64) -> u64 {
    id
}

fn server() -> Server {
    builder!().build().expect("valid")
}

fn answer_by_question(question: &abilities::testing::UserQuestion) -> Elicitation {
    match question.message.as_str() {
        "Your name?" => Elicitation::accept(json!({"name": "Ada"})),
        "Go on?" => Elicitation::decline(),
        other => panic!("unexpected question {other}"),
    }
}

#[tokio::test]
async fn elicitation_is_answered_per_question_and_the_questions_are_kept() {
    for version in ["2025-06-18", "2025-11-25", "2026-07-28"] {
        let client = server()
            .test_client()
            .protocol_version(version)
            .answer_elicitation(answer_by_question)
            .connect()
            .await
            .expect("connects");
        let result = client
            .call("two_questions", json!({}))
            .await
            .expect("answers");
        assert_eq!(
            result.structured_content,
            Some(json!({"result": {"name": {"name": "Ada"}, "go": false}})),
            "{version}"
        );
        let asked: Vec<Value> = client
            .requests()
            .iter()
            .map(|r| r["params"]["message"].clone())
            .collect();
        // On 2026-07-28 the handler runs again from the start once the first answer
        // comes: the first question is asked once, as its answer travels with the retry.
        assert_eq!(asked, [json!("Your name?"), json!("Go on?")], "{version}");
        let facts = client
            .call("client_facts", json!({}))
            .await
            .expect("answers");
        assert_eq!(
            facts.structured_content,
            Some(
                json!({"result": {"elicit": true, "sample": false, "roots": false, "version": version}})
            ),
            "{version}"
        );
    }
}

#[tokio::test]
async fn a_client_without_answers_declares_nothing_and_cannot_be_asked() {
    let client = server().test_client().connect().await.expect("connects");
    let facts = client
        .call("client_facts", json!({}))
        .await
        .expect("answers");
    assert_eq!(
        facts.structured_content,
        Some(
            json!({"result": {"elicit": false, "sample": false, "roots": false, "version": "2025-11-25"}})
        )
    );
    let refused = client
        .call("two_questions", json!({}))
        .await
        .expect("answers");
    assert_eq!(refused.is_error, Some(true));
    let text = serde_json::to_value(&refused.content[0]).expect("JSON")["text"].clone();
    let error: Value = serde_json::from_str(text.as_str().expect("text")).expect("JSON");
    assert_eq!(error["code"], "CLIENT_CAPABILITY_MISSING");
    assert!(client.requests().is_empty());
}

#[tokio::test]
async fn sampling_and_roots_are_answered_as_scripted() {
    let client = server()
        .test_client()
        .answer_sampling(|params| {
            assert_eq!(params["maxTokens"], 10);
            json!({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "test"})
        })
        .roots([Root::new("file:///work/notes")])
        .connect()
        .await
        .expect("connects");
    let result = client
        .call("model_and_roots", json!({}))
        .await
        .expect("answers");
    assert_eq!(
        result.structured_content,
        Some(json!({"result": {"said": "hi", "roots": ["file:///work/notes"]}}))
    );
    let methods: Vec<Value> = client
        .requests()
        .iter()
        .map(|r| r["method"].clone())
        .collect();
    assert_eq!(
        methods,
        [json!("sampling/createMessage"), json!("roots/list")]
    );
}

#[tokio::test]
async fn log_messages_are_heard() {
    // A session's level is `info` until the client sets another: the warning is sent.
    let client = server().test_client().connect().await.expect("connects");
    let done = client
        .call("chatty_work", json!({}))
        .await
        .expect("answers");
    assert_eq!(done.structured_content, Some(json!({"result": "done"})));
    let logged = client
        .notification("notifications/message", Duration::from_secs(5))
        .await
        .expect("a log message");
    assert_eq!(logged["params"]["level"], "warning");
    assert_eq!(client.log_messages()[0]["data"], json!({"step": "started"}));
}

#[tokio::test]
async fn a_confirming_delete_is_tested_in_a_few_lines() {
    let server = server();
    let confirming = server
        .test_client()
        .answer_elicitation(|_| Elicitation::accept(json!({"confirm": true})))
        .connect()
        .await
        .expect("connects");
    let deleted = confirming
        .call("remove_note", json!({"id": 4}))
        .await
        .expect("answers");
    assert_eq!(deleted.structured_content, Some(json!({"result": 4})));
    assert_eq!(
        confirming.requests()[0]["params"]["message"],
        r#"Confirm destructive operation 'remove_note' with {"id":4}"#
    );
    let declining = server
        .test_client()
        .answer_elicitation(|_| Elicitation::cancel())
        .connect()
        .await
        .expect("connects");
    let kept = declining
        .call("remove_note", json!({"id": 4}))
        .await
        .expect("answers");
    assert_eq!(kept.is_error, Some(true));
}

/// Start `name` with `args` on `client`: the id of the task it runs as.
async fn task_of(client: &abilities::testing::TestClient, name: &str, args: Value) -> String {
    match client.start(name, args).await.expect("answers") {
        abilities::testing::Started::Task(id) => id,
        abilities::testing::Started::Done(result) => panic!("{name} answered at once: {result:?}"),
    }
}

/// Count to `n` in the background.
#[ability(semantic = "READ", task = "optional")]
async fn slow_count(ctx: &Context, n: u64) -> u64 {
    ctx.background().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    n
}

/// Wait in the background, forever: only a cancellation ends it.
#[ability(semantic = "READ", task = "required")]
async fn wait_forever(ctx: &Context) -> u64 {
    ctx.background().await;
    std::future::pending::<u64>().await
}

#[tokio::test]
async fn a_task_runs_is_polled_to_its_result_and_another_is_cancelled() {
    use abilities::testing::Started;
    let client = server()
        .test_client()
        .protocol_version("2026-07-28")
        .tasks()
        .connect()
        .await
        .expect("connects");
    let id = task_of(&client, "slow_count", json!({"n": 3})).await;
    let done = client
        .finished_task(&id, Duration::from_secs(10))
        .await
        .expect("tasks/get answers")
        .expect("the task ends");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"],
        json!({"result": 3}),
        "{done}"
    );

    let id = task_of(&client, "wait_forever", json!({})).await;
    assert_eq!(
        client.task(&id).await.expect("answers")["status"],
        "working"
    );
    client.cancel_task(&id).await.expect("cancelled");
    let ended = client
        .finished_task(&id, Duration::from_secs(10))
        .await
        .expect("tasks/get answers")
        .expect("the task ends");
    assert_eq!(ended["status"], "cancelled", "{ended}");

    // Without the extension, the same call answers in the request.
    let plain = server()
        .test_client()
        .protocol_version("2026-07-28")
        .connect()
        .await
        .expect("connects");
    let Started::Done(result) = plain
        .start("slow_count", json!({"n": 2}))
        .await
        .expect("answers")
    else {
        panic!("a task without the extension");
    };
    assert_eq!(result.structured_content, Some(json!({"result": 2})));
}

/// Count to `n` in the background, reporting each step.
#[ability(semantic = "READ", task = "optional")]
async fn counted(ctx: &Context, n: u64) -> u64 {
    ctx.background().await;
    for step in 0..n {
        ctx.progress(step as f64, Some(n as f64), Some("counting"))
            .await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    n
}

/// Ask in the background whether to go on.
#[ability(semantic = "EXECUTE", task = "required")]
async fn ask_then_go(ctx: &Context) -> Result<Value, AbilityError> {
    ctx.background().await;
    let schema = json!({"type": "object", "properties": {"go": {"type": "boolean"}}});
    let answer = ctx.ask("go").elicit("Go on?", schema).await?;
    Ok(json!({"answer": answer.content}))
}

#[tokio::test]
async fn tasks_of_either_version_run_report_and_are_cancelled_by_one_script() {
    for version in ["2025-11-25", "2026-07-28"] {
        let client = server()
            .test_client()
            .protocol_version(version)
            .tasks()
            .connect()
            .await
            .expect("connects");
        let id = task_of(&client, "counted", json!({"n": 3})).await;
        let result = client
            .task_result(&id, Duration::from_secs(10))
            .await
            .expect("the result");
        assert_eq!(
            result.structured_content,
            Some(json!({"result": 3})),
            "{version}"
        );
        let task = client.task(&id).await.expect("answers");
        assert_eq!(task["status"], "completed", "{version}: {task}");
        if version == "2025-11-25" {
            // That version's task is flat, `ttl` in milliseconds; its progress reaches the
            // session, and so does its end.
            assert_eq!(task["ttl"], 3_600_000, "{task}");
            let progress = client
                .notification("notifications/progress", Duration::from_secs(5))
                .await
                .expect("progress");
            assert_eq!(progress["params"]["message"], "counting", "{progress}");
            let ended = client
                .notification("notifications/tasks/status", Duration::from_secs(5))
                .await
                .expect("the task's end");
            assert_eq!(ended["params"]["taskId"], id.as_str(), "{ended}");
        }

        let id = task_of(&client, "wait_forever", json!({})).await;
        client.cancel_task(&id).await.expect("cancelled");
        let ended = client
            .finished_task(&id, Duration::from_secs(10))
            .await
            .expect("tasks/get answers")
            .expect("the task ends");
        assert_eq!(ended["status"], "cancelled", "{version}: {ended}");
        assert!(
            client
                .task_result(&id, Duration::from_secs(10))
                .await
                .is_err(),
            "{version}: a cancelled task has no result"
        );
    }
}

#[tokio::test]
async fn a_2025_task_asks_the_script_through_its_session() {
    let client = server()
        .test_client()
        .tasks()
        .answer_elicitation(|_| Elicitation::accept(json!({"go": true})))
        .connect()
        .await
        .expect("connects");
    let id = task_of(&client, "ask_then_go", json!({})).await;
    let result = client
        .task_result(&id, Duration::from_secs(10))
        .await
        .expect("the result");
    assert_eq!(
        result.structured_content,
        Some(json!({"result": {"answer": {"go": true}}}))
    );
    let asked = &client.requests()[0];
    assert_eq!(
        asked["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str(),
        "{asked}"
    );
}
