//! Skills (the `io.modelcontextprotocol/skills` extension): a `SKILL.md` and the files beside
//! it, served with the abilities. Give hand-written ones to
//! [`ServerBuilder::skill`](crate::ServerBuilder::skill); have one written per category from the
//! abilities with [`ServerBuilder::category_skills`](crate::ServerBuilder::category_skills).

pub use abilities_runtime::{SKILL_MD, ServedSkills, Skill, SkillError, SkillFile};
