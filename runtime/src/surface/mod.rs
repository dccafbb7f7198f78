//! Surfaces: views of one registry on the wire. Each maps names, envelopes and error channels;
//! none re-does the pipeline's work.

pub(crate) mod catalog;
pub(crate) mod native;
