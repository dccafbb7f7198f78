use abilities::{Context, ability};

/// Says hi.
#[ability(semantic = "READ", flatten)]
fn hello(ctx: &Context) -> String {
    ctx.request_id().unwrap_or_default().to_owned()
}

fn main() {}
