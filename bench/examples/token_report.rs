// cargo run -p abilities-bench --example token_report
//! How many tokens each surface costs a model, counted with the o200k_base tokenizer on the
//! exact JSON a client sends and receives:
//!
//! - `tools/list` of the `site` and `todo` examples and a 45-operation fixture, in native,
//!   MCP-AQL semantic and MCP-AQL single modes;
//! - a scripted session over the fixture and the generated back office at 500 and 5,000
//!   operations: list the tools, find and describe the operations of three tasks, call them
//!   and read the results, in native mode, CRUDE (semantic), single, and single with
//!   `introspect`'s search.
//!
//! Exits non-zero when a budget is missed: for the fixture, single mode's `tools/list` at most
//! 3% of native and semantic's at most 15%; at 5,000 operations, the whole single-with-search
//! session at most 1% of native's `tools/list` alone.

use abilities_examples::{catalog, site, todo};

use std::process::ExitCode;

use abilities::protocol::rmcp::model::ListToolsResult;
use abilities::{
    Registry, Server, Surface,
    aql::{self, Aql, AqlMode},
};
use serde_json::{Value, json};

/// Forty-five operations of a typical business back end.
mod fixture {
    use abilities::ability;
    use serde_json::{Value, json};

    macro_rules! operations {
        ($($name:tt $semantic:tt $description:tt ($($param:ident : $ty:ty = $doc:tt),*);)*) => {$(
            #[ability(semantic = $semantic, name = $name, description = $description)]
            #[allow(unused_variables, reason = "a fixture: only the schema matters")]
            fn handler($(#[param(description = $doc)] $param: $ty),*) -> Value {
                json!({})
            }
        )*};
    }

    macro_rules! module_per_operation {
        ($($module:ident: $name:tt $semantic:tt $description:tt ($($param:ident : $ty:ty = $doc:tt),*);)*) => {$(
            mod $module {
                use super::*;
                operations! { $name $semantic $description ($($param: $ty = $doc),*); }
            }
        )*};
    }

    module_per_operation! {
        list_contacts: "crm/list-contacts" "READ" "List contacts, newest first." (company: Option<String> = "Only contacts of this company.", tag: Option<String> = "Only contacts with this tag.");
        get_contact: "crm/get-contact" "READ" "Get one contact with its notes." (id: u64 = "The contact id.");
        create_contact: "crm/create-contact" "CREATE" "Add a contact." (name: String = "Full name.", email: String = "Email address.", company: Option<String> = "Company name.");
        update_contact: "crm/update-contact" "UPDATE" "Change a contact's details." (id: u64 = "The contact id.", email: Option<String> = "New email address.", phone: Option<String> = "New phone number.");
        delete_contact: "crm/delete-contact" "DELETE" "Delete a contact and its notes." (id: u64 = "The contact id.");
        list_companies: "crm/list-companies" "READ" "List companies." (industry: Option<String> = "Only this industry.");
        get_company: "crm/get-company" "READ" "Get one company with its contacts." (id: u64 = "The company id.");
        create_company: "crm/create-company" "CREATE" "Add a company." (name: String = "Company name.", domain: Option<String> = "Web domain.");
        merge_companies: "crm/merge-companies" "EXECUTE" "Merge two companies into one." (keep: u64 = "The company that remains.", merge: u64 = "The company merged into it.");
        list_deals: "sales/list-deals" "READ" "List deals by stage." (stage: Option<String> = "Only this pipeline stage.", owner: Option<String> = "Only deals of this owner.");
        get_deal: "sales/get-deal" "READ" "Get one deal." (id: u64 = "The deal id.");
        create_deal: "sales/create-deal" "CREATE" "Open a deal." (title: String = "Deal title.", value: f64 = "Expected value.", contact: u64 = "The contact id.");
        move_deal: "sales/move-deal" "UPDATE" "Move a deal to another stage." (id: u64 = "The deal id.", stage: String = "The new stage.");
        close_deal: "sales/close-deal" "EXECUTE" "Close a deal as won or lost." (id: u64 = "The deal id.", won: bool = "Whether it was won.");
        forecast: "sales/forecast" "READ" "Forecast revenue for a quarter." (quarter: String = "Like 2026-Q4.");
        list_invoices: "billing/list-invoices" "READ" "List invoices." (status: Option<String> = "Only this status.", customer: Option<u64> = "Only this customer.");
        get_invoice: "billing/get-invoice" "READ" "Get one invoice with its lines." (id: u64 = "The invoice id.");
        create_invoice: "billing/create-invoice" "CREATE" "Draft an invoice." (customer: u64 = "The customer id.", due_days: u32 = "Days until due.");
        add_invoice_line: "billing/add-invoice-line" "UPDATE" "Add a line to a draft invoice." (id: u64 = "The invoice id.", item: String = "What is billed.", amount: f64 = "Line amount.");
        send_invoice: "billing/send-invoice" "EXECUTE" "Send an invoice to its customer." (id: u64 = "The invoice id.");
        void_invoice: "billing/void-invoice" "DELETE" "Void an invoice." (id: u64 = "The invoice id.", reason: String = "Why.");
        record_payment: "billing/record-payment" "CREATE" "Record a payment." (invoice: u64 = "The invoice id.", amount: f64 = "Amount paid.");
        refund_payment: "billing/refund-payment" "EXECUTE" "Refund a payment." (id: u64 = "The payment id.", amount: Option<f64> = "Partial amount; all by default.");
        list_products: "catalog/list-products" "READ" "List products." (category: Option<String> = "Only this category.", in_stock: Option<bool> = "Only products in stock.");
        get_product: "catalog/get-product" "READ" "Get one product." (sku: String = "The SKU.");
        create_product: "catalog/create-product" "CREATE" "Add a product." (sku: String = "The SKU.", name: String = "Product name.", price: f64 = "Unit price.");
        update_price: "catalog/update-price" "UPDATE" "Change a product's price." (sku: String = "The SKU.", price: f64 = "New unit price.");
        archive_product: "catalog/archive-product" "DELETE" "Archive a product." (sku: String = "The SKU.");
        adjust_stock: "inventory/adjust-stock" "UPDATE" "Adjust stock on hand." (sku: String = "The SKU.", delta: i64 = "Units added (negative: removed).", warehouse: String = "Warehouse code.");
        stock_levels: "inventory/stock-levels" "READ" "Stock on hand per warehouse." (sku: Option<String> = "Only this SKU.");
        transfer_stock: "inventory/transfer-stock" "EXECUTE" "Move stock between warehouses." (sku: String = "The SKU.", units: u32 = "Units moved.", from: String = "Source warehouse.", to: String = "Target warehouse.");
        list_orders: "orders/list-orders" "READ" "List orders." (status: Option<String> = "Only this status.", since: Option<String> = "Placed on or after this date.");
        get_order: "orders/get-order" "READ" "Get one order." (id: u64 = "The order id.");
        create_order: "orders/create-order" "CREATE" "Place an order." (customer: u64 = "The customer id.", skus: Vec<String> = "What is ordered.");
        cancel_order: "orders/cancel-order" "DELETE" "Cancel an order." (id: u64 = "The order id.", reason: String = "Why.");
        ship_order: "orders/ship-order" "EXECUTE" "Ship an order." (id: u64 = "The order id.", carrier: String = "Carrier code.");
        list_tickets: "support/list-tickets" "READ" "List support tickets." (status: Option<String> = "Only this status.", assignee: Option<String> = "Only this assignee.");
        get_ticket: "support/get-ticket" "READ" "Get one ticket with its thread." (id: u64 = "The ticket id.");
        open_ticket: "support/open-ticket" "CREATE" "Open a ticket." (subject: String = "Subject.", body: String = "What happened.", contact: u64 = "The contact id.");
        reply_ticket: "support/reply-ticket" "UPDATE" "Reply on a ticket." (id: u64 = "The ticket id.", body: String = "The reply.");
        close_ticket: "support/close-ticket" "EXECUTE" "Close a ticket." (id: u64 = "The ticket id.");
        list_users: "admin/list-users" "READ" "List staff accounts." (role: Option<String> = "Only this role.");
        invite_user: "admin/invite-user" "CREATE" "Invite a staff member." (email: String = "Email address.", role: String = "Role to grant.");
        remove_user: "admin/remove-user" "DELETE" "Remove a staff account." (id: u64 = "The user id.");
        audit_log: "admin/audit-log" "READ" "Read the audit log." (since: Option<String> = "From this date.", actor: Option<String> = "Only this actor.");
    }
}

/// The `tools/list` result JSON of `surface` over `registry`, and its o200k_base tokens.
fn measure(
    bpe: &tiktoken_rs::CoreBPE,
    registry: Registry,
    surface: Surface,
) -> Result<(usize, usize), Box<dyn std::error::Error>> {
    // The examples' databases, in memory: nothing is called, but a server only builds with
    // the state its abilities take.
    let memory = std::path::Path::new(":memory:");
    let server = Server::builder()
        .registry(registry)
        .surface(surface)
        .state(site::Db::open(memory)?)
        .state(todo::TodoDb::open(memory)?)
        .build()?;
    let json = serde_json::to_string(&ListToolsResult::with_all_items(server.tools().to_vec()))?;
    Ok((
        server.tools().len(),
        bpe.encode_with_special_tokens(&json).len(),
    ))
}

/// One task of the scripted session: the words a model would search with, the ability that
/// does it and the arguments it sends.
struct Task {
    search: &'static str,
    ability: String,
    args: Value,
}

fn tasks(prefix: &str) -> Vec<Task> {
    vec![
        Task {
            search: "get invoice",
            ability: format!("{prefix}billing/get-invoice"),
            args: json!({"id": 42}),
        },
        Task {
            search: "create contact",
            ability: format!("{prefix}crm/create-contact"),
            args: if prefix.is_empty() {
                json!({"name": "Ada Lovelace", "email": "ada@example.com"})
            } else {
                json!({"name": "Ada Lovelace", "owner": "ada@example.com"})
            },
        },
        Task {
            search: "list tickets",
            ability: format!("{prefix}support/list-tickets"),
            args: json!({"status": "open"}),
        },
    ]
}

/// How a session finds its operations.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    Native,
    Crude,
    Single,
    Search,
}

/// The tokens of one scripted session of `way` over `registry`: what the model reads (the
/// tool list, introspection, results) and writes (each call's name and arguments).
async fn session(
    bpe: &tiktoken_rs::CoreBPE,
    registry: Registry,
    way: Way,
    tasks: &[Task],
) -> Result<usize, Box<dyn std::error::Error>> {
    let surface = match way {
        Way::Native => Surface::Native,
        Way::Crude => Surface::aql_semantic(),
        Way::Single | Way::Search => Surface::aql_single(),
    };
    let names: Vec<(String, String)> = tasks
        .iter()
        .map(|t| {
            let tool = registry
                .get(&t.ability)
                .map(|a| a.tool_name().to_owned())
                .unwrap_or_default();
            (tool, aql::operation_name(&t.ability))
        })
        .collect();
    let server = Server::builder()
        .registry(registry)
        .surface(surface)
        .build()?;
    let client = server.connect().await?;
    let count = |value: &dyn erased::Json| -> Result<usize, Box<dyn std::error::Error>> {
        Ok(bpe.encode_with_special_tokens(&value.json()?).len())
    };
    let mut tokens = count(&ListToolsResult::with_all_items(client.list_tools().await?))?;
    // CRUDE and single read the whole operation list once.
    if matches!(way, Way::Crude | Way::Single) {
        let tool = if way == Way::Crude {
            "mcp_aql_read"
        } else {
            "mcp_aql"
        };
        let request = json!({"operation": "introspect", "params": {"query": "operations"}});
        tokens += count(&request)? + count(&client.call(tool, request).await?)?;
    }
    for (task, (tool, operation)) in tasks.iter().zip(&names) {
        let (tool, args) = match way {
            Way::Native => (tool.clone(), task.args.clone()),
            Way::Crude | Way::Single | Way::Search => {
                let endpoint = if way == Way::Crude {
                    "mcp_aql_read"
                } else {
                    "mcp_aql"
                };
                if way == Way::Search {
                    let request = json!({"operation": "introspect",
                        "params": {"query": "operations", "search": task.search, "first": 5}});
                    let found = client.call(endpoint, request.clone()).await?;
                    let listed = envelope(&found)["data"]["operations"]
                        .as_array()
                        .is_some_and(|ops| ops.iter().any(|op| op["name"] == *operation));
                    if !listed {
                        return Err(format!(
                            "the search '{}' did not find {operation}",
                            task.search
                        )
                        .into());
                    }
                    tokens += count(&request)? + count(&found)?;
                }
                let request = json!({"operation": "introspect",
                    "params": {"query": "operations", "name": operation}});
                let detail = client.call(endpoint, request.clone()).await?;
                tokens += count(&request)? + count(&detail)?;
                let tool = match way {
                    Way::Crude => {
                        let family = envelope(&detail)["data"]["operation"]["endpoint"]
                            .as_str()
                            .unwrap_or("read")
                            .to_owned();
                        format!("mcp_aql_{family}")
                    }
                    _ => "mcp_aql".to_owned(),
                };
                (tool, json!({"operation": operation, "params": task.args}))
            }
        };
        let request = json!({"name": tool, "arguments": args});
        let result = client.call(&tool, args).await?;
        // A refusal is no session: MCP-AQL answers a recoverable one with `isError: false`.
        let refused = way != Way::Native && envelope(&result)["success"] != true;
        if result.is_error == Some(true) || refused {
            return Err(format!("{tool} failed: {}", result.json()?).into());
        }
        tokens += count(&request)? + count(&result)?;
    }
    client.close().await;
    Ok(tokens)
}

/// The MCP-AQL envelope of a result (its JSON text), `null` if it has none.
fn envelope(result: &abilities::protocol::rmcp::model::CallToolResult) -> Value {
    result
        .content
        .first()
        .and_then(|c| c.as_text())
        .and_then(|t| serde_json::from_str(&t.text).ok())
        .unwrap_or(Value::Null)
}

/// Anything whose wire JSON is counted.
mod erased {
    pub(crate) trait Json {
        fn json(&self) -> Result<String, serde_json::Error>;
    }

    impl<T: serde::Serialize> Json for T {
        fn json(&self) -> Result<String, serde_json::Error> {
            serde_json::to_string(self)
        }
    }
}

use erased::Json as _;

/// The session table, and whether single with search stays within 1% of native's
/// `tools/list` at the largest size.
fn sessions(bpe: &tiktoken_rs::CoreBPE) -> Result<bool, Box<dyn std::error::Error>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    println!(
        "| operations | native `tools/list` alone | native session | CRUDE session | single session | single with search | single with search / native `tools/list` |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut within = true;
    let sizes: [(&str, usize); 3] = [("fixture", 45), ("catalog", 500), ("catalog", 5_000)];
    for (source, n) in sizes {
        let (registry, prefix): (fn(usize) -> Result<Registry, _>, &str) = if source == "fixture" {
            (|_| Registry::collect_in("token_report::fixture"), "")
        } else {
            (catalog::registry, "eu-")
        };
        let tasks = tasks(prefix);
        let (_, list) = measure(bpe, registry(n)?, Surface::Native)?;
        let mut row = Vec::new();
        for way in [Way::Native, Way::Crude, Way::Single, Way::Search] {
            row.push(rt.block_on(session(bpe, registry(n)?, way, &tasks))?);
        }
        let ratio = 100.0 * row[3] as f64 / list as f64;
        println!(
            "| {n} | {list} | {} | {} | {} | {} | {ratio:.2}% |",
            row[0], row[1], row[2], row[3]
        );
        if n == 5_000 {
            within = ratio <= 1.0;
        }
    }
    Ok(within)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let bpe = tiktoken_rs::o200k_base()?;
    let servers = [
        ("site", "abilities_examples::site"),
        ("todo", "abilities_examples::todo"),
        ("fixture (45 ops)", "token_report::fixture"),
    ];
    println!(
        "| server | operations | native tokens | semantic tokens (tools) | semantic, empty families skipped | single tokens |"
    );
    println!("|---|---|---|---|---|---|");
    let mut within = true;
    for (label, module) in servers {
        let operations = Registry::collect_in(module)?.len();
        let (_, native) = measure(&bpe, Registry::collect_in(module)?, Surface::Native)?;
        let (tools, semantic) =
            measure(&bpe, Registry::collect_in(module)?, Surface::aql_semantic())?;
        let skipping = Surface::Aql(Aql::new(AqlMode::Semantic).skip_empty_families(true));
        let (fewer, skipped) = measure(&bpe, Registry::collect_in(module)?, skipping)?;
        let (_, single) = measure(&bpe, Registry::collect_in(module)?, Surface::aql_single())?;
        let pct = |n: usize| 100.0 * n as f64 / native as f64;
        println!(
            "| {label} | {operations} | {native} | {semantic} ({tools}), {:.1}% | {skipped} ({fewer}), {:.1}% | {single}, {:.1}% |",
            pct(semantic),
            pct(skipped),
            pct(single)
        );
        if module.ends_with("fixture") {
            within = pct(single) <= 3.0 && pct(semantic) <= 15.0;
        }
    }
    println!();
    if within {
        println!("budgets met: single mode <= 3% and semantic <= 15% of native for the fixture");
    } else {
        println!(
            "BUDGET MISSED: single mode must be <= 3% and semantic <= 15% of native for the fixture"
        );
    }
    println!();
    let searched = sessions(&bpe)?;
    println!();
    if searched {
        println!(
            "budget met: at 5,000 operations, the single-with-search session <= 1% of native's tools/list"
        );
    } else {
        println!(
            "BUDGET MISSED: at 5,000 operations, the single-with-search session must be <= 1% of native's tools/list"
        );
    }
    Ok(within && searched)
}
