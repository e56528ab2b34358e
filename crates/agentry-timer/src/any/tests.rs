use super::*;

#[test]
fn kind_names_round_trip() {
    for kind in EngineKind::ALL {
        assert_eq!(kind.name().parse::<EngineKind>(), Ok(kind));
        assert_eq!(
            kind.to_string().to_uppercase().parse::<EngineKind>(),
            Ok(kind)
        );
    }
    let error = "tree".parse::<EngineKind>().unwrap_err();
    assert_eq!(error.input, "tree");
    assert_eq!(
        error.to_string(),
        "unknown timer engine `tree` (expected heap, wheel or list)"
    );
    assert_eq!(EngineKind::default(), EngineKind::Heap);
}

#[test]
fn new_builds_the_requested_engine() {
    for kind in EngineKind::ALL {
        let engine = AnyEngine::<()>::new(kind);
        assert_eq!(engine.kind(), kind);
        assert!(engine.is_empty());
    }
    assert_eq!(
        AnyEngine::from(HeapEngine::<()>::new()).kind(),
        EngineKind::Heap
    );
    assert_eq!(
        AnyEngine::from(WheelEngine::<()>::new()).kind(),
        EngineKind::Wheel
    );
    assert_eq!(
        AnyEngine::from(ListEngine::<()>::new()).kind(),
        EngineKind::List
    );
}

#[test]
fn every_operation_reaches_the_engine() {
    let ms = 1_000_000;
    for kind in EngineKind::ALL {
        let mut engine = AnyEngine::with_capacity(kind, 8);
        let a = engine.insert(2 * ms, 'a');
        let b = engine.insert(ms, 'b');
        let c = engine.insert(3 * ms, 'c');
        assert_eq!(engine.len(), 3);
        assert_eq!(engine.next_deadline(), Some(ms), "{kind}");
        assert_eq!(engine.cancel(a), Some('a'));
        let mut out = Vec::new();
        engine.expire(ms, &mut out);
        assert_eq!(out, [(b, 'b')]);
        out.clear();
        engine.drain(&mut out);
        assert_eq!(out, [(c, 'c')]);
        assert!(engine.is_empty());
    }
}
