// cargo run --example site
//! The seeds' WordPress walkthrough as abilities: a flattened `my-plugin/count-posts`, post
//! lookup, creation with `dry_run`, and a deletion that needs a scope, on an in-memory store.
//!
//! With no arguments it lists the derived tools and calls one. To call any tool:
//! `cargo run --example site -- call wp_get_post '{"id": 1}'`.

use std::process::ExitCode;
use std::sync::Mutex;

use abilities::{AbilityError, Caller, Context, Registry, State, ability};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A kind of content.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum PostType {
    Post,
    Page,
    Attachment,
}

/// Publication status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Status {
    Draft,
    Publish,
}

/// A post as the site stores it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
struct Post {
    id: u64,
    post_type: PostType,
    title: String,
    content: String,
    status: Status,
}

/// The site's content.
struct Site {
    posts: Mutex<Vec<Post>>,
}

impl Site {
    fn seeded() -> Self {
        let post = |id, post_type, title: &str, status| Post {
            id,
            post_type,
            title: title.to_owned(),
            content: format!("{title}, in full."),
            status,
        };
        Self {
            posts: Mutex::new(vec![
                post(1, PostType::Post, "Hello world", Status::Publish),
                post(2, PostType::Post, "Second thoughts", Status::Publish),
                post(3, PostType::Post, "Unfinished", Status::Draft),
                post(4, PostType::Page, "About", Status::Publish),
            ]),
        }
    }

    fn posts(&self) -> Result<std::sync::MutexGuard<'_, Vec<Post>>, AbilityError> {
        self.posts
            .lock()
            .map_err(|_| AbilityError::internal("the post store is unavailable"))
    }
}

/// Count published posts of one type.
#[ability(
    semantic = "READ",
    flatten,
    name = "my-plugin/count-posts",
    category = "site"
)]
fn count_posts(site: State<Site>, post_type: PostType) -> Result<u64, AbilityError> {
    let posts = site.posts()?;
    Ok(posts
        .iter()
        .filter(|p| p.post_type == post_type && p.status == Status::Publish)
        .count() as u64)
}

/// Get one post by id.
#[ability(semantic = "READ", title = "Get post")]
fn wp_get_post(
    site: State<Site>,
    #[param(description = "The post id.")] id: u64,
) -> Result<Post, AbilityError> {
    site.posts()?
        .iter()
        .find(|p| p.id == id)
        .cloned()
        .ok_or_else(|| AbilityError::not_found(format!("post {id} does not exist")))
}

/// Create a post. With `dry_run`, validate and return the would-be post without saving it.
#[ability(semantic = "CREATE", title = "Create post", permission = "posts:write")]
fn wp_create_post(
    site: State<Site>,
    #[param(description = "The title.")] title: String,
    #[param(description = "The body.", default = String::new())] content: String,
    #[param(default = Status::Draft)] status: Status,
    #[param(description = "Only validate.", default = false)] dry_run: bool,
) -> Result<Post, AbilityError> {
    if title.trim().is_empty() {
        return Err(AbilityError::invalid("the title cannot be empty"));
    }
    let mut posts = site.posts()?;
    let id = posts.iter().map(|p| p.id).max().unwrap_or(0) + 1;
    let post = Post {
        id,
        post_type: PostType::Post,
        title,
        content,
        status,
    };
    if !dry_run {
        posts.push(post.clone());
    }
    Ok(post)
}

/// What a deletion reports.
#[derive(Serialize, JsonSchema)]
struct Deleted {
    deleted: bool,
}

/// Delete a post for good.
#[ability(
    semantic = "DELETE",
    title = "Delete post",
    permission = "posts:delete"
)]
fn wp_delete_post(site: State<Site>, id: u64) -> Result<Deleted, AbilityError> {
    let mut posts = site.posts()?;
    let before = posts.len();
    posts.retain(|p| p.id != id);
    if posts.len() == before {
        return Err(AbilityError::not_found(format!("post {id} does not exist")));
    }
    Ok(Deleted { deleted: true })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let registry = match Registry::collect() {
        Ok(registry) => registry,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let ctx = Context::new()
        .with_caller(Caller::trusted("cli"))
        .with_state(Site::seeded());
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => {
            list(&registry);
            let args = json!({"input": "post"});
            println!("\ncall my-plugin-count-posts {args}");
            report(registry.call(ctx, "my-plugin-count-posts", args).await)
        }
        [cmd, name, rest @ ..] if cmd == "call" && rest.len() <= 1 => {
            let args = match rest.first().map(|a| serde_json::from_str::<Value>(a)) {
                None => Value::Null,
                Some(Ok(args)) => args,
                Some(Err(e)) => {
                    eprintln!("error: the arguments are not JSON: {e}");
                    return ExitCode::FAILURE;
                }
            };
            report(registry.call(ctx, name, args).await)
        }
        _ => {
            eprintln!("usage: site [call TOOL ['{{JSON arguments}}']]");
            ExitCode::FAILURE
        }
    }
}

fn list(registry: &Registry) {
    println!("{} tools:", registry.len());
    for ability in registry {
        println!(
            "\n{} ({}, {})",
            ability.tool_name(),
            ability.name(),
            ability.semantic()
        );
        println!("  {}", ability.description());
        println!(
            "  inputSchema:  {}",
            Value::Object((**ability.input_schema()).clone())
        );
        if let Some(output) = ability.output_schema() {
            println!("  outputSchema: {}", Value::Object((**output).clone()));
        }
        println!(
            "  annotations:  {}",
            serde_json::to_value(ability.annotations()).unwrap_or_default()
        );
        if let Some(scope) = ability.permission() {
            println!("  needs scope:  {scope}");
        }
    }
}

fn report(result: Result<Value, AbilityError>) -> ExitCode {
    match result {
        Ok(value) => {
            println!("{value}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            println!("{}", serde_json::to_value(&error).unwrap_or_default());
            ExitCode::FAILURE
        }
    }
}
