//! A large back office, built at run time: up to 10,000 abilities over ten regions, twenty
//! domains of five entities each and ten verbs (`eu-billing/list-invoices`), each with its own
//! description, category (its domain) and parameters. The token report, the discovery tests
//! and the MCP-AQL bench measure catalogs of that size with it.

use abilities::{Ability, AbilityError, Context, Registry, Semantic};
use serde_json::{Value, json};

/// The regions the back office runs in, each a copy of every domain.
const REGIONS: [(&str, &str); 10] = [
    ("eu", "the European Union"),
    ("us", "the United States"),
    ("apac", "Asia-Pacific"),
    ("latam", "Latin America"),
    ("mea", "the Middle East and Africa"),
    ("uk", "the United Kingdom"),
    ("ca", "Canada"),
    ("in", "India"),
    ("jp", "Japan"),
    ("au", "Australia"),
];

/// The domains and their entities, singular and plural.
const DOMAINS: [(&str, [(&str, &str); 5]); 20] = [
    (
        "crm",
        [
            ("contact", "contacts"),
            ("company", "companies"),
            ("lead", "leads"),
            ("note", "notes"),
            ("segment", "segments"),
        ],
    ),
    (
        "sales",
        [
            ("deal", "deals"),
            ("quote", "quotes"),
            ("forecast", "forecasts"),
            ("territory", "territories"),
            ("commission", "commissions"),
        ],
    ),
    (
        "billing",
        [
            ("invoice", "invoices"),
            ("payment", "payments"),
            ("refund", "refunds"),
            ("credit-note", "credit-notes"),
            ("tax-rate", "tax-rates"),
        ],
    ),
    (
        "catalog",
        [
            ("product", "products"),
            ("category", "categories"),
            ("price-list", "price-lists"),
            ("bundle", "bundles"),
            ("review", "reviews"),
        ],
    ),
    (
        "inventory",
        [
            ("stock-item", "stock-items"),
            ("warehouse", "warehouses"),
            ("transfer", "transfers"),
            ("count", "counts"),
            ("supplier", "suppliers"),
        ],
    ),
    (
        "orders",
        [
            ("order", "orders"),
            ("return", "returns"),
            ("cart", "carts"),
            ("coupon", "coupons"),
            ("subscription", "subscriptions"),
        ],
    ),
    (
        "support",
        [
            ("ticket", "tickets"),
            ("macro", "macros"),
            ("article", "articles"),
            ("survey", "surveys"),
            ("escalation", "escalations"),
        ],
    ),
    (
        "hr",
        [
            ("employee", "employees"),
            ("position", "positions"),
            ("leave-request", "leave-requests"),
            ("review-cycle", "review-cycles"),
            ("team", "teams"),
        ],
    ),
    (
        "payroll",
        [
            ("payslip", "payslips"),
            ("pay-run", "pay-runs"),
            ("deduction", "deductions"),
            ("bonus", "bonuses"),
            ("timesheet", "timesheets"),
        ],
    ),
    (
        "marketing",
        [
            ("campaign", "campaigns"),
            ("audience", "audiences"),
            ("newsletter", "newsletters"),
            ("landing-page", "landing-pages"),
            ("ad-set", "ad-sets"),
        ],
    ),
    (
        "analytics",
        [
            ("dashboard", "dashboards"),
            ("report", "reports"),
            ("metric", "metrics"),
            ("alert", "alerts"),
            ("funnel", "funnels"),
        ],
    ),
    (
        "shipping",
        [
            ("shipment", "shipments"),
            ("carrier", "carriers"),
            ("label", "labels"),
            ("route", "routes"),
            ("pickup", "pickups"),
        ],
    ),
    (
        "procurement",
        [
            ("purchase-order", "purchase-orders"),
            ("vendor", "vendors"),
            ("requisition", "requisitions"),
            ("contract", "contracts"),
            ("bid", "bids"),
        ],
    ),
    (
        "finance",
        [
            ("ledger-entry", "ledger-entries"),
            ("budget", "budgets"),
            ("expense", "expenses"),
            ("bank-account", "bank-accounts"),
            ("journal", "journals"),
        ],
    ),
    (
        "legal",
        [
            ("agreement", "agreements"),
            ("matter", "matters"),
            ("policy", "policies"),
            ("claim", "claims"),
            ("trademark", "trademarks"),
        ],
    ),
    (
        "projects",
        [
            ("project", "projects"),
            ("task", "tasks"),
            ("milestone", "milestones"),
            ("sprint", "sprints"),
            ("risk", "risks"),
        ],
    ),
    (
        "docs",
        [
            ("document", "documents"),
            ("folder", "folders"),
            ("template", "templates"),
            ("signature", "signatures"),
            ("comment", "comments"),
        ],
    ),
    (
        "assets",
        [
            ("asset", "assets"),
            ("license", "licenses"),
            ("device", "devices"),
            ("maintenance-job", "maintenance-jobs"),
            ("location", "locations"),
        ],
    ),
    (
        "fleet",
        [
            ("vehicle", "vehicles"),
            ("driver", "drivers"),
            ("trip", "trips"),
            ("fuel-card", "fuel-cards"),
            ("inspection", "inspections"),
        ],
    ),
    (
        "compliance",
        [
            ("audit", "audits"),
            ("control", "controls"),
            ("finding", "findings"),
            ("certificate", "certificates"),
            ("incident", "incidents"),
        ],
    ),
];

/// How many abilities the whole back office has.
pub const MAX: usize = REGIONS.len() * DOMAINS.len() * 5 * VERBS;

const VERBS: usize = 10;

/// The first `n` abilities of the back office (at most [`MAX`]), region by region.
pub fn registry(n: usize) -> Result<Registry, abilities::registry::RegistryError> {
    let mut abilities = Vec::with_capacity(n.min(MAX));
    'all: for (region, region_name) in REGIONS {
        for (domain, entities) in DOMAINS {
            for (one, many) in entities {
                for verb in 0..VERBS {
                    if abilities.len() == n {
                        break 'all;
                    }
                    abilities.push(ability(region, region_name, domain, one, many, verb)?);
                }
            }
        }
    }
    Registry::from_abilities(abilities)
}

fn ability(
    region: &str,
    region_name: &str,
    domain: &str,
    one: &str,
    many: &str,
    verb: usize,
) -> Result<Ability, abilities::registry::RegistryError> {
    let (a, an) = (one.replace('-', " "), many.replace('-', " "));
    // The article of the singular: "an invoice", "a contact".
    let article = if a.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    let id = json!({"type": "integer", "minimum": 1, "description": format!("The {a} id.")});
    let (name, semantic, description, properties, required): (
        String,
        Semantic,
        String,
        Value,
        Value,
    ) = match verb {
        0 => (
            format!("list-{many}"),
            Semantic::Read,
            format!("List the {an} of {domain} in {region_name}, newest first."),
            json!({"status": {"type": "string", "description": format!("Only {an} in this status.")},
                       "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20, "description": "At most this many."}}),
            json!([]),
        ),
        1 => (
            format!("get-{one}"),
            Semantic::Read,
            format!("Get one {a} of {domain} in {region_name}, with its history."),
            json!({"id": id}),
            json!(["id"]),
        ),
        2 => (
            format!("search-{many}"),
            Semantic::Read,
            format!(
                "Search the {an} of {domain} in {region_name} by words in their names and notes."
            ),
            json!({"query": {"type": "string", "minLength": 1, "description": "The words to look for."}}),
            json!(["query"]),
        ),
        3 => (
            format!("create-{one}"),
            Semantic::Create,
            format!("Create {article} {a} in {domain} for {region_name}."),
            json!({"name": {"type": "string", "minLength": 1, "description": format!("The {a}'s name.")},
                       "owner": {"type": "string", "description": "Who owns it (an email)."}}),
            json!(["name"]),
        ),
        4 => (
            format!("update-{one}"),
            Semantic::Update,
            format!("Change {article} {a}'s name, owner or status in {domain} ({region_name})."),
            json!({"id": id, "name": {"type": "string", "description": "The new name."},
                       "status": {"type": "string", "description": "The new status."}}),
            json!(["id"]),
        ),
        5 => (
            format!("delete-{one}"),
            Semantic::Delete,
            format!("Delete {article} {a} from {domain} in {region_name}, for good."),
            json!({"id": id}),
            json!(["id"]),
        ),
        6 => (
            format!("archive-{one}"),
            Semantic::Update,
            format!(
                "Archive {article} {a} of {domain} in {region_name}: hidden from lists, kept for audits."
            ),
            json!({"id": id}),
            json!(["id"]),
        ),
        7 => (
            format!("export-{many}"),
            Semantic::Read,
            format!("Export every {a} of {domain} in {region_name} as CSV or JSON."),
            json!({"format": {"type": "string", "enum": ["csv", "json"], "default": "csv", "description": "The file format."}}),
            json!([]),
        ),
        8 => (
            format!("import-{many}"),
            Semantic::Create,
            format!("Import {an} into {domain} for {region_name} from a file at a URL."),
            json!({"url": {"type": "string", "format": "uri", "description": "Where the file is."}}),
            json!(["url"]),
        ),
        _ => (
            format!("count-{many}"),
            Semantic::Read,
            format!("Count the {an} of {domain} in {region_name}, optionally by status."),
            json!({"status": {"type": "string", "description": format!("Only {an} in this status.")}}),
            json!([]),
        ),
    };
    let full = format!("{region}-{domain}/{name}");
    let answer = json!({"ability": full.clone(), "ok": true});
    Ability::builder(full, semantic)
        .description(description)
        .category(domain.to_owned())
        .input_schema(json!({"type": "object", "properties": properties, "required": required}))
        .handler(move |_ctx: Context, _args: Value| {
            let answer = answer.clone();
            async move { Ok::<_, AbilityError>(answer) }
        })
        .build()
}
