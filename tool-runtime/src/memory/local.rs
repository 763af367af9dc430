//! [`LocalMemory`]: a run's memory in its own process, for a run that is not
//! durable. It keeps the rules of every [`RunMemory`] (one start per effect,
//! one decision per call, a state that only moves forward) with maps under
//! a mutex, so a run that is not durable takes the same path as a durable
//! one (its steps, its approvals, and the effects another call can meet)
//! and is tested by the same tests.
//!
//! It keeps no more than a run in memory needs, so that a long run (an MCP
//! session of tens of thousands of calls) does not grow with its calls: an
//! effect only while it is under way (two calls of one effect at once, one
//! runs; a finished one is forgotten, as a run that is not durable replays
//! nothing, and so is the start of a call that timed out or was cancelled,
//! withdrawn by the pipeline once its tool can no longer be running), and
//! a parked call until its run settles it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime};

use serde_json::Value;

use super::{
    Answer, Approval, CallStart, Decided, Decision, EXPIRED_BY, JournalError, JournaledCall, JournaledResult, LocalTasks, ParkedCall, RunMemory,
    RunState, Starting, StepDelta, Stepped, TaskStore,
};

/// A run's memory in this process: gone with it. Cheap to clone: clones
/// share one memory. Each answer is ready at once.
#[derive(Clone, Debug, Default)]
pub struct LocalMemory {
    held: Arc<Mutex<Held>>,
    tasks: Arc<LocalTasks>,
}

#[derive(Debug, Default)]
struct Held {
    effects: HashMap<String, Effect>,
    /// Ordered, not hashed: a run's memory most often holds that one run,
    /// found by comparing its id once, on every step.
    runs: BTreeMap<String, RunRow>,
    /// By run id, then in the order parked.
    approvals: HashMap<String, Vec<Parked>>,
}

#[derive(Debug)]
struct Effect {
    run_id: String,
    call_id: String,
    tool: String,
    input: Value,
    started_at: SystemTime,
}

impl Effect {
    fn found(&self) -> JournaledCall {
        // Under way: a finished effect is not kept.
        let outcome = CallStart::UnknownOutcome { call_id: self.call_id.clone(), started_at: self.started_at };
        JournaledCall { call_id: self.call_id.clone(), tool: self.tool.clone(), input: self.input.clone(), outcome }
    }
}

#[derive(Debug)]
struct RunRow {
    version: i64,
    step: usize,
    state: RunState,
    last_calls: Option<String>,
    tools: Vec<String>,
    failures: Vec<(String, u32)>,
}

#[derive(Debug)]
struct Parked {
    approval: Approval,
    settled: bool,
}

impl LocalMemory {
    fn held(&self) -> MutexGuard<'_, Held> {
        // A panic elsewhere cannot leave a map half-written: every change
        // is one insert or one assignment.
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Held {
    fn parked(&mut self, run_id: &str, call_id: &str) -> Option<&mut Parked> {
        self.approvals.get_mut(run_id)?.iter_mut().find(|parked| parked.approval.call.call_id == call_id)
    }

    /// Ends an effect under way: it is forgotten (see the module docs).
    fn finish(&mut self, effect_key: &str) -> Result<(), JournalError> {
        match self.effects.remove(effect_key) {
            None => Err(JournalError::CallNotStarted { effect_key: effect_key.to_owned() }),
            Some(_) => Ok(()),
        }
    }

    fn add_step(&mut self, run_id: &str, delta: &StepDelta, state: &RunState, known: usize) -> Stepped {
        if !self.runs.contains_key(run_id) {
            // The id is copied once, for the run's first step.
            let row = RunRow { version: 0, step: 0, state: RunState::Active, last_calls: None, tools: Vec::new(), failures: Vec::new() };
            self.runs.insert(run_id.to_owned(), row);
        }
        let Some(run) = self.runs.get_mut(run_id) else { unreachable!("inserted above") };
        run.version += 1;
        let resent = delta.steps > 0 && delta.last_calls.is_some() && delta.last_calls == run.last_calls;
        run.step = run.step.saturating_add(delta.steps) - usize::from(resent);
        if state.rank() > run.state.rank() {
            run.state = state.clone();
        }
        if delta.steps > 0 {
            run.last_calls.clone_from(&delta.last_calls);
        }
        for tool in &delta.tools {
            if !run.tools.contains(tool) {
                run.tools.push(tool.clone());
            }
        }
        if !resent {
            for (tool, failed) in &delta.failures {
                match run.failures.iter_mut().find(|(held, _)| held == tool) {
                    Some((_, count)) => *count = count.saturating_add(*failed),
                    None => run.failures.push((tool.clone(), *failed)),
                }
            }
            run.failures.sort();
        }
        Stepped {
            version: run.version,
            step: run.step,
            resent,
            state: run.state.clone(),
            tools: run.tools.get(known..).map_or_else(Vec::new, <[String]>::to_vec),
            tool_count: run.tools.len(),
            failures: run.failures.clone(),
        }
    }

    fn decide(&mut self, run_id: &str, call_id: &str, decision: Decision, by: &str) -> Result<Approval, JournalError> {
        let unknown = || JournalError::UnknownApproval { run_id: run_id.to_owned(), call_id: call_id.to_owned() };
        let parked = self.parked(run_id, call_id).ok_or_else(unknown)?;
        if let Some(decided) = &parked.approval.decided {
            let (by, at) = (decided.by.clone(), decided.at);
            return Err(JournalError::AlreadyDecided { run_id: run_id.to_owned(), call_id: call_id.to_owned(), by, at });
        }
        let now = SystemTime::now();
        if let Some(expires_at) = parked.approval.call.expires_at.filter(|expires_at| *expires_at <= now) {
            return Err(JournalError::ApprovalExpired { run_id: run_id.to_owned(), call_id: call_id.to_owned(), expires_at });
        }
        parked.approval.decided = Some(Decided { decision, by: by.to_owned(), at: now });
        Ok(parked.approval.clone())
    }
}

impl RunMemory for LocalMemory {
    fn until(&self, _until: Instant) -> Arc<dyn RunMemory> {
        // Nothing here waits.
        Arc::new(self.clone())
    }

    fn find_call<'a>(&'a self, effect_key: &'a str) -> Answer<'a, Option<JournaledCall>> {
        Answer::ready(Ok(self.held().effects.get(effect_key).map(Effect::found)))
    }

    fn start_or_find<'a>(&'a self, call: Starting<'a>) -> Answer<'a, Option<JournaledCall>> {
        let mut held = self.held();
        let found = match held.effects.get(call.effect_key) {
            Some(effect) => Some(effect.found()),
            None => {
                let effect = Effect {
                    run_id: call.run_id.to_owned(),
                    call_id: call.call_id.to_owned(),
                    tool: call.tool.to_owned(),
                    input: call.input.clone(),
                    started_at: SystemTime::now(),
                };
                held.effects.insert(call.effect_key.to_owned(), effect);
                None
            }
        };
        Answer::ready(Ok(found))
    }

    fn restart_call<'a>(&'a self, call: Starting<'a>) -> Answer<'a, Option<JournaledCall>> {
        // No finished effect is kept, so none is started again: the one
        // found is under way.
        let answer = match self.held().effects.get(call.effect_key) {
            None => Err(JournalError::CallNotStarted { effect_key: call.effect_key.to_owned() }),
            Some(effect) => Ok(Some(effect.found())),
        };
        Answer::ready(answer)
    }

    fn finish_call<'a>(&'a self, effect_key: &'a str, _result: &'a JournaledResult) -> Answer<'a, ()> {
        Answer::ready(self.held().finish(effect_key))
    }

    fn withdraw_call<'a>(&'a self, effect_key: &'a str, call_id: &'a str) -> Answer<'a, bool> {
        let mut held = self.held();
        let withdrawn = held.effects.get(effect_key).is_some_and(|effect| effect.call_id == call_id);
        if withdrawn {
            held.effects.remove(effect_key);
        }
        Answer::ready(Ok(withdrawn))
    }

    fn resolve_call<'a>(&'a self, effect_key: &'a str, _result: &'a JournaledResult) -> Answer<'a, ()> {
        Answer::ready(self.held().finish(effect_key))
    }

    fn calls_of_run<'a>(&'a self, run_id: &'a str) -> Answer<'a, Vec<JournaledCall>> {
        let held = self.held();
        let mut calls: Vec<_> = held.effects.values().filter(|effect| effect.run_id == run_id).collect();
        calls.sort_by_key(|effect| effect.started_at);
        Answer::ready(Ok(calls.into_iter().map(Effect::found).collect()))
    }

    fn add_step<'a>(&'a self, run_id: &'a str, delta: &'a StepDelta, state: &'a RunState, known: usize) -> Answer<'a, Stepped> {
        Answer::ready(Ok(self.held().add_step(run_id, delta, state, known)))
    }

    fn park<'a>(&'a self, call: &'a ParkedCall) -> Answer<'a, ()> {
        let mut held = self.held();
        let answer = if held.parked(&call.run_id, &call.call_id).is_some() {
            Err(JournalError::AlreadyParked { run_id: call.run_id.clone(), call_id: call.call_id.clone() })
        } else {
            let parked = Parked { approval: Approval { call: call.clone(), decided: None }, settled: false };
            held.approvals.entry(call.run_id.clone()).or_default().push(parked);
            Ok(())
        };
        Answer::ready(answer)
    }

    fn unsettled_for_run<'a>(&'a self, run_id: &'a str) -> Answer<'a, Vec<Approval>> {
        let held = self.held();
        let unsettled = held.approvals.get(run_id).into_iter().flatten().filter(|parked| !parked.settled);
        Answer::ready(Ok(unsettled.map(|parked| parked.approval.clone()).collect()))
    }

    fn approval<'a>(&'a self, run_id: &'a str, call_id: &'a str) -> Answer<'a, Option<Approval>> {
        Answer::ready(Ok(self.held().parked(run_id, call_id).map(|parked| parked.approval.clone())))
    }

    fn decide<'a>(&'a self, run_id: &'a str, call_id: &'a str, decision: Decision, by: &'a str) -> Answer<'a, Approval> {
        Answer::ready(self.held().decide(run_id, call_id, decision, by))
    }

    fn settle<'a>(&'a self, run_id: &'a str, call_id: &'a str) -> Answer<'a, ()> {
        let mut held = self.held();
        // A settled call is forgotten: a run that is not durable is never
        // read back, and a long one must not grow with its approvals.
        if let Some(calls) = held.approvals.get_mut(run_id) {
            calls.retain(|parked| parked.approval.call.call_id != call_id);
            if calls.is_empty() {
                held.approvals.remove(run_id);
            }
        }
        Answer::ready(Ok(()))
    }

    fn end_run<'a>(&'a self, run_id: &'a str, text: &'a str) -> Answer<'a, ()> {
        // Nothing carries a call of an ended run out: its calls are
        // forgotten, decided or not (a memory that holds many runs, an MCP
        // server's tasks, must not grow with the runs that ended).
        let _ = text;
        self.held().approvals.remove(run_id);
        Answer::ready(Ok(()))
    }

    fn waiting_in<'a>(&'a self, prefixes: &'a [&'a str; 2], user_id: Option<&'a str>) -> Answer<'a, (usize, usize)> {
        let now = SystemTime::now();
        let held = self.held();
        let runs = held.approvals.iter().filter(|(run_id, _)| prefixes.iter().any(|prefix| run_id.starts_with(prefix)));
        let waiting = runs
            .flat_map(|(_, calls)| calls)
            .map(|parked| &parked.approval)
            .filter(|approval| approval.decided.is_none() && approval.call.expires_at.is_none_or(|expires_at| expires_at > now));
        let (mut all, mut of_user) = (0, 0);
        for approval in waiting {
            all += 1;
            of_user += usize::from(user_id.is_some() && approval.call.user_id.as_deref() == user_id);
        }
        Answer::ready(Ok((all, of_user)))
    }

    fn task_store(&self) -> Option<&dyn TaskStore> {
        Some(&*self.tasks)
    }

    fn expire<'a>(&'a self, run_id: &'a str, text: &'a str) -> Answer<'a, Vec<Approval>> {
        let now = SystemTime::now();
        let mut held = self.held();
        let mut expired = Vec::new();
        for parked in held.approvals.get_mut(run_id).into_iter().flatten() {
            let due = parked.approval.call.expires_at.is_some_and(|expires_at| expires_at <= now);
            if due && parked.approval.decided.is_none() {
                parked.approval.decided = Some(Decided { decision: Decision::Reject(text.to_owned()), by: EXPIRED_BY.to_owned(), at: now });
                expired.push(parked.approval.clone());
            }
        }
        Answer::ready(Ok(expired))
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use serde_json::json;

    use super::LocalMemory;
    use crate::memory::{Decision, JournalError, ParkedCall, RunMemory, RunState, Starting, StepDelta};

    fn starting<'a>(call_id: &'a str, input: &'a serde_json::Value) -> Starting<'a> {
        Starting { run_id: "r", call_id, tool: "refund", input, effect_key: "k" }
    }

    #[tokio::test]
    async fn an_effect_is_started_once_while_under_way_and_forgotten_once_finished() {
        let memory = LocalMemory::default();
        let input = json!({"order": "A-1"});
        assert_eq!(memory.start_or_find(starting("c1", &input)).await.unwrap(), None, "the first start holds the effect");
        let found = memory.start_or_find(starting("c2", &input)).await.unwrap().expect("the second finds it under way");
        assert_eq!(found.call_id, "c1");
        assert!(!memory.withdraw_call("k", "c2").await.unwrap(), "only the call that started it withdraws it");
        let done = crate::CallResult::success("refund".into(), "c1".into(), "done".into(), None, false, false);
        let result = crate::memory::JournaledResult::from(&done);
        memory.finish_call("k", &result).await.unwrap();
        assert_eq!(memory.find_call("k").await.unwrap(), None, "a finished effect is not kept");
        assert!(matches!(memory.finish_call("k", &result).await, Err(JournalError::CallNotStarted { .. })));
    }

    #[tokio::test]
    async fn a_parked_call_is_decided_once_and_not_past_its_expiry() {
        let memory = LocalMemory::default();
        let now = SystemTime::now();
        let parked = |call_id: &str, expires_at| ParkedCall {
            run_id: "r".into(),
            call_id: call_id.into(),
            tool: "refund".into(),
            input: json!({}),
            user_id: None,
            parked_at: now,
            expires_at,
            question: crate::memory::Question::Approval(crate::memory::Binding::of_arguments(&json!({}))),
        };
        memory.park(&parked("c1", None)).await.unwrap();
        assert!(matches!(memory.park(&parked("c1", None)).await, Err(JournalError::AlreadyParked { .. })));
        memory.decide("r", "c1", Decision::Approve, "alice").await.unwrap();
        let second = memory.decide("r", "c1", Decision::Reject(String::new()), "bob").await;
        assert!(matches!(&second, Err(JournalError::AlreadyDecided { by, .. }) if by == "alice"), "{second:?}");
        memory.park(&parked("c2", Some(now - Duration::from_secs(1)))).await.unwrap();
        assert!(matches!(memory.decide("r", "c2", Decision::Approve, "alice").await, Err(JournalError::ApprovalExpired { .. })));
        assert_eq!(memory.expire("r", "too late").await.unwrap().len(), 1, "the expired call is decided by the expiry");
        memory.settle("r", "c1").await.unwrap();
        let unsettled: Vec<_> = memory.unsettled_for_run("r").await.unwrap().into_iter().map(|approval| approval.call.call_id).collect();
        assert_eq!(unsettled, ["c2"], "a settled call is forgotten");
    }

    #[tokio::test]
    async fn the_calls_waiting_in_runs_of_a_prefix_are_counted_until_decided() {
        let memory = LocalMemory::default();
        let now = SystemTime::now();
        let parked = |run_id: &str, user: &str, expires_at| ParkedCall {
            run_id: run_id.into(),
            call_id: "c".into(),
            tool: "refund".into(),
            input: json!({}),
            user_id: Some(user.into()),
            parked_at: now,
            expires_at,
            question: crate::memory::Question::Approval(crate::memory::Binding::of_arguments(&json!({}))),
        };
        memory.park(&parked("a-1", "alice", None)).await.unwrap();
        memory.park(&parked("b-1", "bob", None)).await.unwrap();
        memory.park(&parked("c-1", "alice", None)).await.unwrap();
        memory.park(&parked("a-2", "alice", Some(now - Duration::from_secs(1)))).await.unwrap();
        assert_eq!(memory.waiting_in(&["a-", "b-"], Some("alice")).await.unwrap(), (2, 1), "not another prefix's, nor an expired one");
        memory.decide("a-1", "c", Decision::Approve, "alice").await.unwrap();
        assert_eq!(memory.waiting_in(&["a-", "b-"], Some("alice")).await.unwrap(), (1, 0), "a decided call waits no more");
    }

    #[tokio::test]
    async fn an_ended_runs_parked_calls_are_forgotten() {
        let memory = LocalMemory::default();
        let parked = |run_id: &str| ParkedCall {
            run_id: run_id.into(),
            call_id: "c".into(),
            tool: "refund".into(),
            input: json!({}),
            user_id: None,
            parked_at: SystemTime::now(),
            expires_at: None,
            question: crate::memory::Question::Approval(crate::memory::Binding::of_arguments(&json!({}))),
        };
        memory.park(&parked("ended")).await.unwrap();
        memory.park(&parked("going")).await.unwrap();
        memory.end_run("ended", "gone").await.unwrap();
        assert!(memory.approval("ended", "c").await.unwrap().is_none(), "the ended run's call is forgotten");
        assert!(memory.approval("going", "c").await.unwrap().is_some(), "another run's is kept");
    }

    #[tokio::test]
    async fn a_run_s_steps_add_up_and_its_state_only_moves_forward() {
        let memory = LocalMemory::default();
        let step = |tools: &[&str], last: &str| StepDelta {
            steps: 1,
            last_calls: Some(last.into()),
            tools: tools.iter().map(|tool| (*tool).to_owned()).collect(),
            failures: vec![("refund".into(), 1)],
        };
        let finished = RunState::Finished { by: None };
        memory.add_step("r", &step(&["lookup"], "a"), &finished, 0).await.unwrap();
        let stepped = memory.add_step("r", &step(&["refund"], "b"), &RunState::Active, 0).await.unwrap();
        assert_eq!((stepped.step, stepped.tools.clone(), stepped.state.clone()), (2, vec!["lookup".into(), "refund".into()], finished));
        assert_eq!(stepped.failures, [("refund".to_owned(), 2)]);
        let resent = memory.add_step("r", &step(&[], "b"), &RunState::Active, 2).await.unwrap();
        assert!(resent.resent, "a step re-sending the last step's calls is that step again");
        assert_eq!((resent.step, resent.failures[0].1, resent.tools.len()), (2, 2, 0));
    }
}
