"""What a lab's history says: `lab` gathers the figures of `gq stats`, `health` the three
numbers it opens with, `review` the monthly review."""
