use super::{cpu_model, loadavg, utc_date};

#[test]
fn formats_utc_dates() {
    assert_eq!(utc_date(0), "1970-01-01T00:00:00Z");
    assert_eq!(utc_date(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(utc_date(1_700_000_000), "2023-11-14T22:13:20Z");
    assert_eq!(utc_date(4_102_444_799), "2099-12-31T23:59:59Z");
}

#[test]
fn reads_cpu_model_and_loadavg() {
    let cpuinfo =
        "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n";
    assert_eq!(
        cpu_model(cpuinfo).as_deref(),
        Some("Intel(R) Xeon(R) CPU @ 2.20GHz")
    );
    assert_eq!(cpu_model("processor: 0\n"), None);
    assert_eq!(
        loadavg("0.06 0.07 0.03 1/82 3865\n"),
        Some([0.06, 0.07, 0.03])
    );
    assert_eq!(loadavg("garbage"), None);
}
