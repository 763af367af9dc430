//! The journal as a run's memory: [`RunMemory`] over the journal's
//! calls, runs and approvals, each operation atomic in the database (see the [module docs](super)).

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use super::Journal;
use crate::memory::{
    Answer, Approval, Decision, JournaledCall, JournaledResult, Keyed, Opened, ParkedCall, RunMemory, RunState, Starting, StepDelta, Stepped,
    TaskStore,
};

impl RunMemory for Journal {
    fn until(&self, until: Instant) -> Arc<dyn RunMemory> {
        Arc::new(Journal::until(self, until))
    }

    fn find_call<'a>(&'a self, effect_key: &'a str) -> Answer<'a, Option<JournaledCall>> {
        Answer::waiting(self.calls().find(effect_key))
    }

    fn start_or_find<'a>(&'a self, call: Starting<'a>) -> Answer<'a, Option<JournaledCall>> {
        Answer::waiting(self.calls().start_or_find(call.run_id, call.call_id, call.tool, call.input, call.effect_key))
    }

    fn restart_call<'a>(&'a self, call: Starting<'a>) -> Answer<'a, Option<JournaledCall>> {
        Answer::waiting(self.calls().restart(call))
    }

    fn finish_call<'a>(&'a self, effect_key: &'a str, result: &'a JournaledResult) -> Answer<'a, ()> {
        Answer::waiting(self.calls().finish(effect_key, result))
    }

    fn withdraw_call<'a>(&'a self, effect_key: &'a str, call_id: &'a str) -> Answer<'a, bool> {
        Answer::waiting(self.calls().withdraw(effect_key, call_id))
    }

    fn withdraw_stale<'a>(&'a self, effect_key: &'a str, call_id: &'a str, started_at: SystemTime) -> Answer<'a, bool> {
        Answer::waiting(self.calls().withdraw_stale(effect_key, call_id, started_at))
    }

    fn resolve_call<'a>(&'a self, effect_key: &'a str, result: &'a JournaledResult) -> Answer<'a, ()> {
        Answer::waiting(self.calls().resolve(effect_key, result))
    }

    fn note_replay<'a>(&'a self, run_id: &'a str, effect_key: &'a str) -> Answer<'a, ()> {
        Answer::waiting(self.calls().note_replay(run_id, effect_key))
    }

    fn calls_of_run<'a>(&'a self, run_id: &'a str) -> Answer<'a, Vec<JournaledCall>> {
        Answer::waiting(self.calls().of_run(run_id))
    }

    fn add_step<'a>(&'a self, run_id: &'a str, delta: &'a StepDelta, state: &'a RunState, known: usize) -> Answer<'a, Stepped> {
        Answer::waiting(self.runs().add_step(run_id, delta, state, known))
    }

    fn open_run<'a>(
        &'a self,
        run_id: &'a str,
        user: Option<&'a str>,
        delta: &'a StepDelta,
        state: &'a RunState,
        known: usize,
    ) -> Answer<'a, (Stepped, Opened)> {
        Answer::waiting(self.runs().open(run_id, user, delta, state, known))
    }

    fn park<'a>(&'a self, call: &'a ParkedCall) -> Answer<'a, ()> {
        Answer::waiting(self.approvals().park(call))
    }

    fn park_held<'a>(&'a self, call: &'a ParkedCall) -> Answer<'a, ()> {
        Answer::waiting(self.approvals().park_held(call))
    }

    fn park_asked<'a>(&'a self, call: &'a ParkedCall, effect: Option<(&'a str, &'a str)>) -> Answer<'a, ()> {
        Answer::waiting(self.approvals().park_asked(call, effect))
    }

    fn starter_gone<'a>(&'a self, effect_key: &'a str) -> Answer<'a, bool> {
        Answer::waiting(self.calls().starter_gone(effect_key))
    }

    fn unsettled_for_run<'a>(&'a self, run_id: &'a str) -> Answer<'a, Vec<Approval>> {
        Answer::waiting(self.approvals().unsettled_for_run(run_id))
    }

    fn approval<'a>(&'a self, run_id: &'a str, call_id: &'a str) -> Answer<'a, Option<Approval>> {
        Answer::waiting(self.approvals().get(run_id, call_id))
    }

    fn decide<'a>(&'a self, run_id: &'a str, call_id: &'a str, decision: Decision, by: &'a str) -> Answer<'a, Approval> {
        Answer::waiting(self.approvals().decide(run_id, call_id, decision, by))
    }

    fn end_run<'a>(&'a self, run_id: &'a str, text: &'a str) -> Answer<'a, ()> {
        Answer::waiting(self.approvals().end_run(run_id, text))
    }

    fn claim_run<'a>(&'a self, run_id: &'a str, user: Option<&'a str>) -> Answer<'a, Option<String>> {
        Answer::waiting(self.runs().claim(run_id, user))
    }

    fn find_keyed<'a>(&'a self, keyed: Keyed<'a>) -> Answer<'a, Option<(Option<String>, JournaledCall)>> {
        Answer::waiting(self.calls().find_keyed(keyed))
    }

    fn waiting_in<'a>(&'a self, prefixes: &'a [&'a str; 2], user_id: Option<&'a str>) -> Answer<'a, (usize, usize)> {
        Answer::waiting(self.approvals().waiting_in(prefixes, user_id))
    }

    fn task_store(&self) -> Option<&dyn TaskStore> {
        Some(self)
    }

    fn settle<'a>(&'a self, run_id: &'a str, call_id: &'a str) -> Answer<'a, ()> {
        Answer::waiting(self.approvals().settle(run_id, call_id))
    }

    fn expire<'a>(&'a self, run_id: &'a str, text: &'a str) -> Answer<'a, Vec<Approval>> {
        Answer::waiting(self.approvals().expire_run(run_id, text))
    }
}
