//! Rich results: images, audio, embedded resources, resource links and several content blocks,
//! beside or instead of the structured JSON of an ability's output.

use serde::Serialize;

/// One MCP content block, serialized exactly as the protocol wants it.
///
/// ```
/// use abilities::Content;
///
/// let image = Content::image(b"\x89PNG...", "image/png");
/// assert_eq!(serde_json::to_value(&image).unwrap()["type"], "image");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 of the bytes.
        data: String,
        /// `image/png`, `image/jpeg`...
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Audio, base64-encoded.
    Audio {
        /// Base64 of the bytes.
        data: String,
        /// `audio/wav`, `audio/mpeg`...
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A resource embedded in the result.
    Resource {
        /// The resource's contents.
        resource: EmbeddedResource,
    },
    /// A link to a resource the client may read.
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// What it is.
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Its MIME type.
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    /// A block passed on exactly as another server sent it (its `type`, annotations and
    /// `_meta` included), as a bridge forwards an upstream's results; see
    /// [`Content::passthrough`].
    #[serde(untagged)]
    Passthrough(serde_json::Map<String, serde_json::Value>),
}

/// The contents of an embedded resource: text or base64 bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EmbeddedResource {
    uri: String,
    #[serde(rename = "mimeType")]
    mime_type: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    blob: Option<String>,
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// An image from its bytes.
    pub fn image(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        Self::Image {
            data: base64(bytes.as_ref()),
            mime_type: mime_type.into(),
        }
    }

    /// Audio from its bytes.
    pub fn audio(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        Self::Audio {
            data: base64(bytes.as_ref()),
            mime_type: mime_type.into(),
        }
    }

    /// An embedded text resource.
    pub fn resource_text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Self::Resource {
            resource: EmbeddedResource {
                uri: uri.into(),
                mime_type: mime_type.into(),
                text: Some(text.into()),
                blob: None,
            },
        }
    }

    /// An embedded binary resource.
    pub fn resource_blob(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        bytes: impl AsRef<[u8]>,
    ) -> Self {
        Self::Resource {
            resource: EmbeddedResource {
                uri: uri.into(),
                mime_type: mime_type.into(),
                text: None,
                blob: Some(base64(bytes.as_ref())),
            },
        }
    }

    /// A block as another server sent it: any JSON object with a string `type`. `None` for
    /// anything else.
    pub fn passthrough(block: serde_json::Value) -> Option<Self> {
        match block {
            serde_json::Value::Object(map) if map.get("type").is_some_and(|t| t.is_string()) => {
                Some(Self::Passthrough(map))
            }
            _ => None,
        }
    }

    /// A link to a resource.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self::ResourceLink {
            uri: uri.into(),
            name: name.into(),
            description: None,
            mime_type: None,
        }
    }
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A result of content blocks only, with no structured part (and no output schema).
///
/// ```standalone_crate
/// use abilities::{Content, resource::Contents, ability};
///
/// /// Draw a one-pixel image.
/// #[ability(semantic = "READ")]
/// fn pixel() -> Contents {
///     Contents::new([Content::text("a pixel:"), Content::image([0u8; 4], "image/png")])
/// }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Contents(pub(crate) Vec<Content>);

impl Contents {
    /// These blocks, in order.
    pub fn new(blocks: impl IntoIterator<Item = Content>) -> Self {
        Self(blocks.into_iter().collect())
    }

    /// Add a block.
    #[must_use]
    pub fn with(mut self, block: Content) -> Self {
        self.0.push(block);
        self
    }
}

/// Structured output `T` (its schema is the output schema, wrapped as usual) plus content
/// blocks that follow the JSON text block.
///
/// ```standalone_crate
/// use abilities::{Content, Rich, ability};
///
/// /// Describe a chart.
/// #[ability(semantic = "READ")]
/// fn chart() -> Rich<u32> {
///     Rich::new(3).with(Content::image([1u8, 2, 3], "image/png"))
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rich<T> {
    pub(crate) structured: T,
    pub(crate) content: Vec<Content>,
}

impl<T> Rich<T> {
    /// The structured output, with no extra blocks yet.
    pub fn new(structured: T) -> Self {
        Self {
            structured,
            content: Vec::new(),
        }
    }

    /// Add a block after the JSON text.
    #[must_use]
    pub fn with(mut self, block: Content) -> Self {
        self.content.push(block);
        self
    }
}

impl Content {
    /// This block as rmcp's type, built directly. A passed-through block (another server's
    /// JSON) is read as one; `None` when it is no block the protocol knows.
    pub(crate) fn into_block(self) -> Option<rmcp::model::ContentBlock> {
        use rmcp::model::ContentBlock;
        Some(match self {
            Self::Text { text } => ContentBlock::text(text),
            Self::Image { data, mime_type } => ContentBlock::image(data, mime_type),
            Self::Audio { data, mime_type } => ContentBlock::audio(data, mime_type),
            Self::Resource { resource } => ContentBlock::resource(resource.into_contents()),
            Self::ResourceLink {
                uri,
                name,
                description,
                mime_type,
            } => {
                let mut link = rmcp::model::Resource::new(uri, name);
                if let Some(description) = description {
                    link = link.with_description(description);
                }
                if let Some(mime_type) = mime_type {
                    link = link.with_mime_type(mime_type);
                }
                ContentBlock::resource_link(link)
            }
            Self::Passthrough(block) => {
                serde_json::from_value(serde_json::Value::Object(block)).ok()?
            }
        })
    }
}

impl EmbeddedResource {
    /// These contents as rmcp's type.
    pub(crate) fn into_contents(self) -> rmcp::model::ResourceContents {
        use rmcp::model::ResourceContents;
        let contents = match self.text {
            Some(text) => ResourceContents::text(text, self.uri),
            // Made with one of text or bytes: without text, the bytes.
            None => ResourceContents::blob(self.blob.unwrap_or_default(), self.uri),
        };
        contents.with_mime_type(self.mime_type)
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Self::text(text)
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}
