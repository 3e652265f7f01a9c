-- +goose Up
INSERT INTO accounts (id, email, balance) VALUES (1, 'ada@example.com', 100), (2, 'grace@example.com', 50);
INSERT INTO transfers (account_id, amount) VALUES (1, 100), (2, 50);

-- +goose Down
DELETE FROM transfers;
DELETE FROM accounts;
