use super::*;

#[test]
fn reads_fields_in_order_and_refuses_to_run_past_the_end() {
    let bytes = [
        1u8, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 4, 2, b'h', b'i', 9,
    ];
    let mut r = Reader::new(&bytes);
    assert_eq!(r.u8("a"), Ok(1));
    assert_eq!(r.u16("b"), Ok(2));
    assert_eq!(r.u32("c"), Ok(3));
    assert_eq!(r.u64("d"), Ok(4));
    assert_eq!(r.str_u8("e"), Ok("hi"));
    assert_eq!(r.rest(), &[9]);
    assert!(matches!(r.u16("f"), Err(DecodeError::Malformed { .. })));
    assert_eq!(r.rest(), &[9], "a failed read consumes nothing");
    assert!(matches!(
        Reader::new(&[2, 0xff, 0xfe]).str_u8("g"),
        Err(DecodeError::Malformed { what: "g", .. })
    ));
}
