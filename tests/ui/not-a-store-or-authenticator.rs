use abilities::Server;

/// Neither keeps records nor reads tokens.
struct Notebook;

fn main() {
    let _ = Server::builder().store(Notebook);
    let _ = Server::builder().authenticator(Notebook);
}
