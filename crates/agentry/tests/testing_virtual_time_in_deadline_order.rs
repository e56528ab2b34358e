//! `TestEnv::advance` lets virtual time pass from one timer deadline to the next: due timers
//! fire in deadline order, each at its own time, and a timer a handler schedules meanwhile
//! fires on time too; `jump` moves time in one leap and sends missed periods in a burst,
//! running nothing. On every timer engine.

use agentry::testing::TestEnv;
use agentry::timer::EngineKind;
use agentry::{Agent, Ctx, Define, DefineError, Mbox};
use std::time::Duration;

const MS: Duration = Duration::from_millis(1);

#[derive(Clone, Debug, PartialEq)]
struct Tick(&'static str);
/// Asks the agent to send itself a tick after a delay.
struct Later(Duration, &'static str);
struct Log;

/// Records ticks; schedules ticks for itself on request.
#[derive(Default)]
struct Recorder(Vec<&'static str>);

impl Agent for Recorder {
    fn define(&mut self, def: &mut Define<Self>) -> Result<(), DefineError> {
        def.on(|r: &mut Recorder, _: &mut Ctx<Recorder>, Tick(t): Tick| r.0.push(t))?;
        def.on(
            |_: &mut Recorder, ctx: &mut Ctx<Recorder>, Later(d, t): Later| {
                let me = ctx.mbox().clone();
                ctx.send_delayed(&me, d, Tick(t)).detach();
            },
        )?;
        def.on_request(|r: &mut Recorder, _: &mut Ctx<Recorder>, _: Log| r.0.clone())?;
        Ok(())
    }
}

fn setup(engine: EngineKind) -> (TestEnv, Mbox) {
    let env = TestEnv::builder()
        .timer_engine(engine)
        .build()
        .expect("test env");
    let recorder = env
        .handle()
        .register_agent(Recorder::default())
        .expect("registered");
    (env, recorder)
}

fn log(env: &mut TestEnv, recorder: &Mbox) -> Vec<&'static str> {
    env.request::<Log, Vec<&'static str>>(recorder, Log)
        .expect("answers")
}

#[test]
fn timers_fire_in_deadline_order_and_handlers_timers_fire_on_time() {
    for engine in EngineKind::ALL {
        let (mut env, recorder) = setup(engine);
        let h = env.handle().clone();
        let _c = h.send_delayed(&recorder, 20 * MS, Tick("c at 20"));
        let _a = h.send_delayed(&recorder, 10 * MS, Later(5 * MS, "b at 15"));
        let _d = h.send_delayed(&recorder, 30 * MS, Tick("d at 30"));
        env.advance(9 * MS).expect("advance");
        assert_eq!(log(&mut env, &recorder), Vec::<&str>::new(), "{engine}");
        env.advance(100 * MS).expect("advance");
        assert_eq!(
            log(&mut env, &recorder),
            ["b at 15", "c at 20", "d at 30"],
            "{engine}: the tick scheduled at 10 ms by a handler fired at 15 ms"
        );
        assert_eq!(env.now(), 109 * MS, "{engine}");
    }
}

#[test]
fn a_jump_sends_missed_periods_in_one_burst_and_runs_nothing() {
    for engine in EngineKind::ALL {
        let (mut env, recorder) = setup(engine);
        let periodic = env
            .handle()
            .send_periodic(&recorder, 10 * MS, 10 * MS, Tick("period"));
        env.run_until_idle().expect("started");
        env.jump(45 * MS);
        assert_eq!(
            env.handle()
                .dispatcher_stats()
                .iter()
                .find(|d| d.kind == "driven")
                .map(|d| d.queued),
            Some(4),
            "{engine}: 10, 20, 30 and 40 ms queued, none handled"
        );
        assert_eq!(env.run_until_idle(), Ok(4), "{engine}");
        assert_eq!(log(&mut env, &recorder).len(), 4, "{engine}");
        periodic.cancel();
    }
}

#[test]
fn time_moves_exactly_by_what_is_asked() {
    let (mut env, _recorder) = setup(EngineKind::Heap);
    env.advance(Duration::from_secs(3)).expect("advance");
    env.advance(250 * MS).expect("advance");
    env.jump(MS);
    assert_eq!(env.now(), Duration::from_millis(3251));
}
