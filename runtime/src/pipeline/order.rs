//! The order of a call's stages, for every surface: the chain's checks among the arguments
//! as sent (the permission check, the rate unless the call goes on with one already
//! counted, the site, a middleware's `Place::Arguments` check), the surface's argument
//! stages, the input, the chain's checks among the validated arguments, with the surface's
//! gates where the chain has `confirmation` (outside a server, after them). (The chain's
//! watchers wrap the whole call; its middleware's `around`s, the handler.)

use super::middleware::{Builtin, Link};
use super::rate::RateLimits;
use super::{Around, Call, Guards, Place, Stage, stages};
use crate::{Ability, AbilityError};

/// What runs outside a server ([`Ability::call`]): the permission and site checks.
pub(super) static UNGUARDED: [Link; 2] = [
    Link::Builtin(Builtin::Permission),
    Link::Builtin(Builtin::Site),
];

/// The input stage, between the two places of the chain's checks.
const INPUT: &dyn Stage = &stages::Input;

/// One stage in order, and whether it reads the arguments (the permission check and the
/// rate do not: a call they refuse is refused before its arguments are read).
pub(super) type Step<'s> = (&'s dyn Stage, bool);

/// The stages of one call, in order (a hand-written iterator: the call path walks it once,
/// and an adapter chain costs more than the stages it yields).
pub(super) struct Order<'s> {
    ability: &'s Ability,
    guards: Option<&'s Guards>,
    continues: bool,
    surface: &'s [&'s dyn Stage],
    part: Part,
    at: usize,
    /// Where the validated links go on once the gates (run at `confirmation`) are done.
    resume: Option<usize>,
}

/// Where [`Order`] stands.
#[derive(Clone, Copy)]
enum Part {
    Arguments,
    SurfaceArguments,
    Input,
    Validated,
    Gates,
    Done,
}

impl<'s> Order<'s> {
    #[inline]
    pub(super) fn new(
        ability: &'s Ability,
        around: Around<'s>,
        continues: bool,
        surface: &'s [&'s dyn Stage],
    ) -> Self {
        Self {
            ability,
            guards: around.guards.map(|guards| &**guards),
            continues,
            surface,
            part: Part::Arguments,
            at: 0,
            resume: None,
        }
    }

    /// The next of the validated `links` that takes part in this call; at `confirmation`,
    /// the gates run first (`Err`).
    #[inline]
    fn validated(&mut self, links: &'s [Link]) -> Result<Option<Step<'s>>, ()> {
        while let Some(link) = links.get(self.at) {
            self.at += 1;
            if matches!(link, Link::Builtin(Builtin::Confirmation)) {
                self.resume = Some(self.at);
                return Err(());
            }
            if let Some(step) = step(link, self.guards, self.ability, self.continues) {
                return Ok(Some(step));
            }
        }
        Ok(None)
    }

    /// The next of `links` that takes part in this call.
    #[inline]
    fn link(&mut self, links: &'s [Link]) -> Option<Step<'s>> {
        while let Some(link) = links.get(self.at) {
            self.at += 1;
            if let Some(step) = step(link, self.guards, self.ability, self.continues) {
                return Some(step);
            }
        }
        None
    }

    /// The next of the surface's stages at `place`.
    #[inline]
    fn surface(&mut self, place: Place) -> Option<Step<'s>> {
        while let Some(&stage) = self.surface.get(self.at) {
            self.at += 1;
            if stage.place() == place {
                return Some((stage, true));
            }
        }
        None
    }

    #[inline]
    fn next_part(&mut self, part: Part) {
        self.part = part;
        self.at = 0;
    }
}

impl<'s> Iterator for Order<'s> {
    type Item = Step<'s>;

    #[inline]
    fn next(&mut self) -> Option<Step<'s>> {
        loop {
            let found = match self.part {
                Part::Arguments => match self.guards {
                    Some(guards) => self.link(&guards.arguments),
                    None => self.link(&UNGUARDED),
                },
                Part::SurfaceArguments => self.surface(Place::Arguments),
                Part::Input => {
                    self.next_part(Part::Validated);
                    return Some((INPUT, true));
                }
                Part::Validated => {
                    match self.guards.map(|guards| self.validated(&guards.validated)) {
                        Some(Ok(step)) => step,
                        Some(Err(())) => {
                            self.next_part(Part::Gates);
                            continue;
                        }
                        None => None,
                    }
                }
                Part::Gates => self.surface(Place::Gate),
                Part::Done => return None,
            };
            if found.is_some() {
                return found;
            }
            if let (Part::Gates, Some(at)) = (self.part, self.resume.take()) {
                self.part = Part::Validated;
                self.at = at;
                continue;
            }
            self.next_part(match self.part {
                Part::Arguments => Part::SurfaceArguments,
                Part::SurfaceArguments => Part::Input,
                // In a server, the gates run only where the chain has `confirmation`.
                Part::Validated if self.guards.is_some() => Part::Done,
                Part::Input | Part::Validated => Part::Gates,
                Part::Gates | Part::Done => Part::Done,
            });
        }
    }
}

/// The stage of `link` for a call of `ability`, if it takes part (a middleware that does
/// not apply, the rate of a call that goes on with one already counted, the audit trail,
/// which only watches, and what needs a server outside one, do not).
#[inline]
pub(super) fn step<'s>(
    link: &'s Link,
    guards: Option<&'s Guards>,
    ability: &Ability,
    continues: bool,
) -> Option<Step<'s>> {
    match link {
        Link::Builtin(Builtin::Permission) => Some((&stages::Permission, false)),
        Link::Builtin(Builtin::Site) => Some((&stages::SiteCheck, true)),
        Link::Builtin(Builtin::Rate) if !continues => {
            guards.map(|guards| (&guards.rates as &dyn Stage, false))
        }
        Link::Builtin(Builtin::Audit) => guards.map(|guards| (&guards.audit as &dyn Stage, false)),
        Link::Builtin(Builtin::Traces) => guards
            .and_then(|guards| guards.traced.as_deref())
            .map(|stage| (stage, false)),
        Link::Builtin(Builtin::Metrics) => guards
            .and_then(|guards| guards.metered.as_deref())
            .map(|stage| (stage, false)),
        Link::Builtin(_) => None,
        Link::User(middleware) => match super::middleware::applies(&**middleware, ability) {
            Ok(applies) => applies.then_some((middleware as &dyn Stage, true)),
            // Refused, not skipped: a policy whose test panics does not let the call by.
            Err(()) => Some((&super::middleware::Panicked, true)),
        },
    }
}

/// The checks of a call with no surface stage and no middleware (native tools, meta,
/// resources, `Ability::call`: most calls), each called directly, in the order [`Order`]
/// yields them: `Some(n)` when the `n`-th may wait (the rate in a shared store), where
/// [`Order`] takes over.
#[inline]
pub(super) fn direct<'a>(
    call: &mut Call<'a>,
    links: &'a [Link],
    rates: Option<&'a RateLimits>,
) -> Result<Option<usize>, AbilityError> {
    let continues = call.ctx.continues();
    let mut done = 0;
    for link in links {
        match link {
            Link::Builtin(Builtin::Permission) => stages::Permission.check(call)?,
            Link::Builtin(Builtin::Site) => {
                call.read_for(true)?;
                stages::SiteCheck.check(call)?;
            }
            Link::Builtin(Builtin::Rate) if !continues => {
                let Some(rates) = rates else { continue };
                if rates.waits() {
                    return Ok(Some(done));
                }
                rates.check(call)?;
            }
            // The rate of a call that goes on, the audit trail (it only watches) and
            // middleware (never on this path) are not steps.
            _ => continue,
        }
        done += 1;
    }
    call.read_for(true)?;
    stages::Input.check(call)?;
    Ok(None)
}
