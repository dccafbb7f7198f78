//! Site identity: which site a server serves, so a client can confirm it talks to the one it
//! discovered. An identifier, never a credential.

use serde::Serialize;

/// The version of the tool result contract `get_site_context` reports.
pub const CONTRACT_VERSION: u32 = 3;

/// The identity of the site a server serves.
///
/// ```
/// use abilities::Site;
///
/// let site = Site::new("main", "https://example.com").with_blog_id(2);
/// assert_eq!(site.site_id(), "main");
/// assert_eq!(site.blog_id(), 2);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Site {
    site_id: String,
    site_url: String,
    blog_id: u64,
}

impl Site {
    /// A site with blog id 1.
    pub fn new(site_id: impl Into<String>, site_url: impl Into<String>) -> Self {
        Self {
            site_id: site_id.into(),
            site_url: site_url.into(),
            blog_id: 1,
        }
    }

    /// Set the blog id (the site of a multisite network).
    #[must_use]
    pub fn with_blog_id(mut self, blog_id: u64) -> Self {
        self.blog_id = blog_id;
        self
    }

    /// The identifier clients may send as `site_id`.
    pub fn site_id(&self) -> &str {
        &self.site_id
    }

    /// The site's URL.
    pub fn site_url(&self) -> &str {
        &self.site_url
    }

    /// The blog id.
    pub fn blog_id(&self) -> u64 {
        self.blog_id
    }
}
