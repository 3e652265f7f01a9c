-- +goose Up
CREATE TABLE orders (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  customer VARCHAR(100) NOT NULL,
  total_cents INT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO orders (customer, total_cents) VALUES ('ada', 1200), ('grace', 800);

-- +goose Down
DROP TABLE orders;
