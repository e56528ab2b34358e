use super::*;

#[test]
fn every_parameter_is_read_and_decoded() {
    let q = parse("filter=Reader%3A%3Ax+y&sort=dropped&offset=3&limit=7").expect("valid");
    assert_eq!(q.filter_text(), "Reader::x y");
    assert_eq!(q.sort_by(), SortBy::Dropped);
    assert_eq!(q.page(), (3, 7));
    assert_eq!(parse(""), Ok(SnapshotQuery::new()));
    assert_eq!(parse("filter="), Ok(SnapshotQuery::new()));
}

#[test]
fn malformed_queries_are_refused() {
    assert_eq!(parse("filter=%zz"), Err(QueryError::BadEncoding));
    assert_eq!(parse("filter=%4"), Err(QueryError::BadEncoding));
    assert_eq!(parse("filter=%ff"), Err(QueryError::BadEncoding));
    assert_eq!(parse("x=1"), Err(QueryError::UnknownParameter("x".into())));
    assert_eq!(parse("sort=id&sort=id"), Err(QueryError::Repeated("sort")));
    assert_eq!(
        parse("sort=size"),
        Err(QueryError::UnknownSort("size".into()))
    );
    assert_eq!(parse("offset=-1"), Err(QueryError::BadNumber("offset")));
    assert_eq!(parse("limit=0"), Err(QueryError::BadNumber("limit")));
    assert_eq!(parse("limit=1001"), Err(QueryError::BadNumber("limit")));
    assert_eq!(
        parse(&format!("filter={}", "a".repeat(257))),
        Err(QueryError::FilterTooLong)
    );
}
