//! Checkpoints: every parameter, buffer and optimizer state tensor plus the step, as safetensors
//! (`fdsr-checkpoint` metadata) with the controller's and the precision policy's state and the
//! metric sums not read yet, and their restoration with checks of model and configuration.

use super::trainer::{TrainConfig, Trainer};
use crate::codec::config::{BitChoice, Policy};
use crate::error::{FdsrError, Result};
use crate::gpu::GpuContext;
use crate::io::safetensors::{NamedTensor, SafeTensors};

/// Value of the `format` metadata key.
pub const FORMAT: &str = "fdsr-checkpoint-1";

/// Value of the `policy_terms` metadata key: what the policy in `config` means. Checkpoints
/// without it name their policies in the terms of before, when `,mask` also clamped at 0 and
/// kept own masks (`,mask=clamp` now) and `,grad` weighed 64 (now `,grad=64`); up to terms 2 an
/// `fdsr` budget reallocated between tensors by the probe (`,realloc` now); up to terms 3 `,grad`
/// weighed dropped bands as the DC (`,grad,drop=dc` now).
pub const POLICY_TERMS: &str = "4";

/// The `config` key of a checkpoint written in policy terms `terms` (`None`: before they were
/// recorded), in today's terms.
fn in_current_terms(key: &str, terms: Option<&str>) -> Result<String> {
    if terms == Some(POLICY_TERMS) {
        return Ok(key.to_string());
    }
    if let Some(other) = terms.filter(|t| !["2", "3"].contains(t)) {
        return Err(FdsrError::Corrupt(format!("unknown policy_terms '{other}' (this fdsr knows {POLICY_TERMS})")));
    }
    let Some((head, policy)) = key.split_once(" policy=") else { return Ok(key.to_string()) };
    let flags: Vec<&str> = policy
        .split(',')
        .map(|piece| match piece {
            "mask" if terms.is_none() => "mask=clamp",
            "grad" if terms.is_none() => "grad=64",
            "grad" => "grad,drop=dc",
            other => other,
        })
        .collect();
    let policy = flags.join(",");
    let policy = match policy.parse::<Policy>() {
        Ok(Policy::Fdsr(mut c)) if terms != Some("3") && matches!(c.bits, BitChoice::Budget(_)) => {
            c.realloc = true;
            Policy::Fdsr(c).to_string()
        }
        // Printed again so the flags stand in today's order.
        Ok(p) => p.to_string(),
        Err(_) => policy,
    };
    Ok(format!("{head} policy={policy}"))
}

/// What must match for a checkpoint to continue a run (everything that changes the result).
pub fn config_key(c: &TrainConfig) -> String {
    format!(
        "model={} epochs={} batch={} lr={} schedule={} opt={} momentum={} nesterov={} wd={} betas={},{} eps={} seed={} augment={} policy={}",
        c.model,
        c.epochs,
        c.batch,
        c.lr,
        c.schedule,
        c.opt.kind,
        c.opt.momentum,
        c.opt.nesterov,
        c.opt.weight_decay,
        c.opt.beta1,
        c.opt.beta2,
        c.opt.eps,
        c.seed,
        c.augment,
        c.policy.as_ref().map_or("none".to_string(), |p| p.to_string())
    )
}

/// The trainer's whole state (reads every tensor back from the device; DFQ gates' counts are
/// first added to the BitOPs count).
pub async fn save(ctx: &GpuContext, t: &mut Trainer, extra: &[(&str, String)]) -> Result<SafeTensors> {
    t.count_gates(ctx).await?;
    let mut tensors = Vec::new();
    let mut params = Vec::new();
    t.model.visit(&mut |p| params.push((p.name.clone(), p.value.clone())));
    for (name, v) in params {
        tensors.push(NamedTensor::from_f32(name, v.shape().to_vec(), &v.to_vec(ctx).await?));
    }
    for (name, s1, s2) in &t.opt.state {
        tensors.push(NamedTensor::from_f32(format!("optim.{name}.0"), s1.shape().to_vec(), &s1.to_vec(ctx).await?));
        if let Some(s2) = s2 {
            tensors.push(NamedTensor::from_f32(format!("optim.{name}.1"), s2.shape().to_vec(), &s2.to_vec(ctx).await?));
        }
    }
    let mut metadata = vec![
        ("format".to_string(), FORMAT.to_string()),
        ("model".to_string(), t.config.model.to_string()),
        ("config".to_string(), config_key(&t.config)),
        ("policy_terms".to_string(), POLICY_TERMS.to_string()),
        ("step".to_string(), t.step.to_string()),
        ("optimizer_steps".to_string(), t.opt.steps.to_string()),
    ];
    if let Some(c) = &t.controller {
        metadata.push(("controller".to_string(), c.state()));
    }
    if let Some(p) = &t.precision.policy {
        metadata.push(("precision".to_string(), p.to_string()));
    }
    metadata.push(("precision_state".to_string(), t.precision.state()));
    // Unread metric sums: PFQ's training-loss signal (and the next log line) go on exactly.
    let sums = t.sums.to_vec(ctx).await?;
    let sums = format!("{:08x},{:08x},{},{}", sums[0].to_bits(), sums[1].to_bits(), t.summed_images, t.summed_steps);
    metadata.push(("metric_sums".to_string(), sums));
    metadata.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
    Ok(SafeTensors { tensors, metadata })
}

fn meta<'a>(st: &'a SafeTensors, key: &str) -> Result<&'a str> {
    st.meta(key).ok_or_else(|| FdsrError::Corrupt(format!("checkpoint has no '{key}' metadata")))
}

/// The `metric_sums` metadata: the device's loss and correct sums, images and steps (none in
/// older checkpoints).
fn metric_sums(st: &SafeTensors) -> Result<Option<([f32; 2], u64, u64)>> {
    let Some(v) = st.meta("metric_sums") else { return Ok(None) };
    let bad = || FdsrError::Corrupt(format!("checkpoint metadata metric_sums='{v}' is malformed"));
    let f = v.split(',').collect::<Vec<_>>();
    let [loss, correct, images, steps] = f.as_slice() else { return Err(bad()) };
    let sum = |x: &str| u32::from_str_radix(x, 16).map(f32::from_bits).map_err(|_| bad());
    let count = |x: &str| x.parse::<u64>().map_err(|_| bad());
    Ok(Some(([sum(loss)?, sum(correct)?], count(images)?, count(steps)?)))
}

fn number(st: &SafeTensors, key: &str) -> Result<u64> {
    let v = meta(st, key)?;
    v.parse().map_err(|_| FdsrError::Corrupt(format!("checkpoint metadata {key}='{v}' is not a number")))
}

/// Loads `st` into `t` (built with the same configuration): every tensor by name and shape.
/// Nothing is changed unless every check passes.
pub fn restore(ctx: &GpuContext, t: &mut Trainer, st: &SafeTensors) -> Result<()> {
    if meta(st, "format")? != FORMAT {
        return Err(FdsrError::Corrupt(format!("not an fdsr checkpoint (format '{}')", meta(st, "format")?)));
    }
    let model = meta(st, "model")?;
    if model != t.config.model.to_string() {
        return Err(FdsrError::InvalidConfig(format!(
            "the checkpoint is of model {model}, this run trains {}",
            t.config.model
        )));
    }
    let theirs = in_current_terms(meta(st, "config")?, st.meta("policy_terms"))?;
    let ours = config_key(&t.config);
    if theirs != ours {
        return Err(FdsrError::InvalidConfig(format!(
            "the checkpoint's run ({theirs}) differs from this one ({ours})"
        )));
    }
    let (step, opt_steps) = (number(st, "step")?, number(st, "optimizer_steps")?);
    let sums = metric_sums(st)?;
    let mut writes = Vec::new();
    let mut missing = None;
    let mut check = |name: &str, target: &super::Tensor| match st.f32(name) {
        Ok(v) if st.get(name).is_some_and(|n| n.shape == target.shape()) => writes.push((target.clone(), v)),
        Ok(_) => missing = Some(format!("{name} has another shape than {:?}", target.shape())),
        Err(e) => missing = Some(e.to_string()),
    };
    t.model.visit(&mut |p| check(&p.name, &p.value));
    for (name, s1, s2) in &t.opt.state {
        check(&format!("optim.{name}.0"), s1);
        if let Some(s2) = s2 {
            check(&format!("optim.{name}.1"), s2);
        }
    }
    if let Some(m) = missing {
        return Err(FdsrError::Corrupt(format!("checkpoint: {m}")));
    }
    let controller = match (&t.controller, st.meta("controller")) {
        (Some(c), Some(state)) => {
            let mut c = c.clone();
            c.restore(state)?;
            Some(c)
        }
        (None, None) => None,
        (mine, _) => {
            return Err(FdsrError::InvalidConfig(format!(
                "the checkpoint {} a budget controller and this run {}",
                if mine.is_some() { "has no" } else { "has" },
                if mine.is_some() { "has one" } else { "has none" }
            )))
        }
    };
    let ours = t.precision.policy.as_ref().map(|p| p.to_string());
    if st.meta("precision") != ours.as_deref() {
        return Err(FdsrError::InvalidConfig(format!(
            "the checkpoint's precision policy ({}) differs from this run's ({})",
            st.meta("precision").unwrap_or("none"),
            ours.as_deref().unwrap_or("none")
        )));
    }
    let mut precision = t.precision.clone();
    if let Some(state) = st.meta("precision_state") {
        precision.restore(state)?;
    } else if precision.policy.is_some() {
        return Err(FdsrError::Corrupt("checkpoint has no 'precision_state' metadata".into()));
    }
    for (target, v) in writes {
        target.write(ctx, &v)?;
    }
    if let Some((v, images, steps)) = sums {
        t.sums.write(ctx, &v)?;
        (t.summed_images, t.summed_steps) = (images, steps);
    }
    t.precision = precision;
    t.step = step;
    t.opt.steps = opt_steps;
    if let Some(c) = controller {
        t.saved.set_budgets(c.budgets().clone());
        t.controller = Some(c);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::in_current_terms;

    #[test]
    fn older_policy_terms_are_translated_piece_by_piece() {
        let key = "model=tiny seed=0 augment=false policy=fdsr:budget=2,mask,grad";
        let want = "model=tiny seed=0 augment=false policy=fdsr:budget=2,mask=clamp,grad=64,realloc";
        assert_eq!(in_current_terms(key, None).unwrap(), want);
        let two = "seed=0 policy=fdsr:ratio=16,mask,grad,edges=0/1/6/64";
        assert_eq!(
            in_current_terms(two, Some("2")).unwrap(),
            "seed=0 policy=fdsr:ratio=16,mask,grad,drop=dc,realloc,edges=0/1/6/64"
        );
        assert_eq!(
            in_current_terms(two, Some("3")).unwrap(),
            "seed=0 policy=fdsr:ratio=16,mask,grad,drop=dc,edges=0/1/6/64"
        );
        let fixed = "seed=0 policy=fdsr:ratio=16,mask,grad=8";
        assert_eq!(in_current_terms(fixed, Some("3")).unwrap(), fixed, "grad=W weighs both as it did");
        let auto = "seed=0 policy=fdsr:ratio=16,mask,auto";
        assert_eq!(in_current_terms(auto, Some("2")).unwrap(), auto);
        for same in
            ["seed=0 policy=none", "policy=fdsr:bits=8,4,2,0,mask=zeros,grad=4", "no policy", "policy=uniform:2"]
        {
            assert_eq!(in_current_terms(same, None).unwrap(), same);
            assert_eq!(in_current_terms(same, Some("2")).unwrap(), same);
            assert_eq!(in_current_terms(same, Some("3")).unwrap(), same);
        }
        assert_eq!(in_current_terms(two, Some("4")).unwrap(), two, "today's terms stay");
        assert!(in_current_terms(two, Some("9")).is_err());
    }
}
