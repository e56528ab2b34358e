//! The supervised child the supervision strategy tests share: a worker that logs its starts
//! and finishes by incarnation, fails on demand and says which incarnation answers.

use super::{DEADLINE, EXPECTED, Log};
use agentry::{Agent, Ctx, Define, DefineError, Mbox, UserError};

/// Makes a [`Worker`] panic.
pub struct Boom;
/// Asks which incarnation answers.
pub struct Which;

/// A supervised child that logs `start name#n` / `finish name#n`, panics on [`Boom`] and answers
/// [`Which`] with its incarnation number.
pub struct Worker {
    name: &'static str,
    incarnation: u32,
    log: Log,
}

impl Agent for Worker {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|w: &mut Worker, _: &mut Ctx<Worker>, _: Boom| {
            panic!("{EXPECTED}: {} fails", w.name)
        })?;
        def.on_request(|w: &mut Worker, _: &mut Ctx<Worker>, _: Which| w.incarnation)?;
        Ok(())
    }

    fn on_start(&mut self, _: &mut Ctx<Self>) -> Result<(), UserError> {
        self.log
            .push(format!("start {}#{}", self.name, self.incarnation));
        Ok(())
    }

    fn on_finish(&mut self, _: &mut Ctx<Self>) {
        self.log
            .push(format!("finish {}#{}", self.name, self.incarnation));
    }
}

/// A factory numbering its incarnations from 1.
pub fn worker(name: &'static str, log: &Log) -> impl FnMut() -> Worker + Send + 'static {
    let log = log.clone();
    let mut made = 0;
    move || {
        made += 1;
        Worker {
            name,
            incarnation: made,
            log: log.clone(),
        }
    }
}

/// The incarnation of the worker behind `mbox`.
pub fn which(mbox: &Mbox) -> u32 {
    mbox.request::<Which, u32>(Which, DEADLINE)
        .expect("the worker answers")
}
