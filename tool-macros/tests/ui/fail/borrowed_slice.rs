use tool_runtime::prelude::*;

/// Add numbers.
#[tool]
async fn sum(numbers: &[i64]) -> i64 {
    numbers.iter().sum()
}

fn main() {}
